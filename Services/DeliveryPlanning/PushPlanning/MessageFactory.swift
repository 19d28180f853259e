import Foundation
import PushEvents

/// One device chosen by targeting.
package struct TargetedSubscription: Sendable, Hashable {
    package var appId: UUID
    package var registrationToken: String
    package var userKey: String
    package var params: [String: String]
    /// Excluded from the delivery: quarantined or unsubscribed.
    package var disabled: Bool
    /// Why, as `exclusion_log.reason` says it (`quarantined: Unregistered`, `unsubscribed`).
    package var exclusionReason: String?
    /// The data key its message is sealed under (`push.subject_keys`: its person's, or its
    /// own without a user key); nil until the targeting read or created it.
    package var subjectKey: SubjectKey?
    /// The device's `osLanguage` as registered ("" when none, or when the delivery has no
    /// `content.languages` and the targeting did not read it).
    package var osLanguage: String

    /// A subject's id and data key (32 bytes).
    package struct SubjectKey: Sendable, Hashable {
        package var id: UUID
        package var key: [UInt8]

        package init(id: UUID, key: [UInt8]) {
            self.id = id
            self.key = key
        }
    }

    package init(
        appId: UUID, registrationToken: String, userKey: String, params: [String: String], disabled: Bool = false, exclusionReason: String? = nil,
        subjectKey: SubjectKey? = nil, osLanguage: String = ""
    ) {
        self.appId = appId
        self.registrationToken = registrationToken
        self.userKey = userKey
        self.params = params
        self.disabled = disabled
        self.exclusionReason = exclusionReason
        self.subjectKey = subjectKey
        self.osLanguage = osLanguage
    }
}

/// What planning made of one targeted device.
package enum PlannedMessage: Sendable {
    case apns(APNSMessagePlanned)
    case fcm(FCMMessagePlanned)
    /// Not sendable as built (payload too large, reserved key): the message ends `failed`, soft.
    case failed(MessageFailed)

    package var messageId: UUID {
        switch self {
        case .apns(let message): message.messageId
        case .fcm(let message): message.messageId
        case .failed(let failure): failure.message.messageId
        }
    }

    package var broadLogId: Int32? {
        switch self {
        case .apns(let message): message.broadLogId
        case .fcm(let message): message.broadLogId
        case .failed(let failure): failure.message.broadLogId
        }
    }

    /// The data-key subject a sealed message is sealed for (its person); nil for a failure.
    package var subjectId: UUID? {
        switch self {
        case .apns(let message): message.sealing?.subjectId
        case .fcm(let message): message.sealing?.subjectId
        case .failed: nil
        }
    }
}

/// Builds each device's message for one delivery: personalization, the platform payload, the
/// provider limits. Templates are parsed once here, not per device.
package struct MessageFactory: Sendable {
    /// The providers' payload limit (APNs `aps` payload; FCM data + notification).
    package static let maximumPayloadBytes = 4096
    static let reservedFCMKeys: Set<String> = ["from", "message_type"]

    let delivery: DeliveryAccepted
    let apps: [UUID: PlanningApp]
    /// The parsed texts of one language, or the default ones.
    struct Texts: Sendable {
        var title: MessageTemplate?
        var subtitle: MessageTemplate?
        var body: MessageTemplate?

        var all: [MessageTemplate] { [title, subtitle, body].compactMap { $0 } }
    }

    /// One set of texts: the default ones, and each language's by its tag as the request
    /// wrote it. A delivery has one, or one per A/B variant.
    struct TextSet: Sendable {
        var texts: Texts
        var languageTexts: [String: Texts]
        var languages: ContentLanguages

        init(title: String?, subtitle: String?, body: String?, languages: [String: DeliveryRequest.Texts]?) throws {
            func template(_ text: String?) throws -> MessageTemplate? {
                guard let text, !text.isEmpty else { return nil }
                return try MessageTemplate(parsing: text)
            }
            texts = Texts(title: try template(title), subtitle: try template(subtitle), body: try template(body))
            languageTexts = try (languages ?? [:]).mapValues { texts in
                Texts(title: try template(texts.title), subtitle: try template(texts.subtitle), body: try template(texts.body))
            }
            self.languages = ContentLanguages(languages)
        }

        var all: [MessageTemplate] { texts.all + languageTexts.values.flatMap(\.all) }
    }

    /// The content's texts, or each variant's in the request's order.
    let textSets: [TextSet]
    package let variants: ContentVariants
    /// Variables in name order with their templates.
    let variables: [(name: String, template: MessageTemplate)]

    /// True when rendering needs the subscriptions' parameters.
    package let needsParams: Bool

    package init(delivery: DeliveryAccepted, apps: [PlanningApp]) throws {
        self.delivery = delivery
        self.apps = Dictionary(apps.map { ($0.appId, $0) }, uniquingKeysWith: { first, _ in first })
        let content = delivery.content
        if let variants = content.variants, !variants.isEmpty {
            textSets = try variants.map { try TextSet(title: $0.title, subtitle: $0.subtitle, body: $0.body, languages: $0.languages) }
        } else {
            textSets = [try TextSet(title: content.title, subtitle: content.subtitle, body: content.body, languages: content.languages)]
        }
        variants = ContentVariants(content.variants)
        variables = try (content.variables ?? [:]).sorted { $0.key < $1.key }.map { ($0.key, try MessageTemplate(parsing: $0.value)) }
        let templates = textSets.flatMap(\.all) + variables.map(\.template)
        needsParams = templates.contains { !$0.parameterNames.isEmpty }
    }

    /// True when the texts depend on the device's `osLanguage`.
    package var needsLanguage: Bool { textSets.contains { !$0.languages.isEmpty } }

    /// The content's languages (the first variant's with variants: the preview counts
    /// languages only without variants).
    package var languages: ContentLanguages { textSets[0].languages }

    /// The index in `content.variants` of the variant a message gets; nil without variants.
    package func variantIndex(forMessage messageId: UUID) -> Int? {
        variants.index(forMessage: messageId)
    }

    /// The name of the variant a message gets; nil without variants.
    package func variant(forMessage messageId: UUID) -> String? {
        variantIndex(forMessage: messageId).flatMap { delivery.content.variants?[$0].name }
    }

    /// The tag of `content.languages` (of the message's variant's `languages`) whose texts the
    /// device gets; nil for the default texts.
    package func language(for subscription: TargetedSubscription, messageId: UUID) -> String? {
        textSets[variantIndex(forMessage: messageId) ?? 0].languages.tag(forDevice: subscription.osLanguage)
    }

    /// The device's message id: the same for every planning of this delivery.
    package func messageId(for subscription: TargetedSubscription) -> UUID {
        MessageIdentity.messageId(deliveryId: delivery.deliveryId, appId: subscription.appId, registrationToken: subscription.registrationToken)
    }

    /// The message for one device (never nil for an app of the delivery). `broadLogId` is its
    /// `_mId`.
    package func message(for subscription: TargetedSubscription, messageId: UUID, broadLogId: Int32, plannedAt: Date) -> PlannedMessage? {
        built(for: subscription, messageId: messageId, broadLogId: broadLogId, plannedAt: plannedAt)?.message
    }

    /// The message and the size of what counts against the provider's limit (the whole APNs
    /// payload; FCM's `data`, `notification` and `android.notification`), also when that size
    /// made the message fail.
    func built(for subscription: TargetedSubscription, messageId: UUID, broadLogId: Int32, plannedAt: Date) -> (message: PlannedMessage, contentBytes: Int)? {
        guard let app = apps[subscription.appId] else { return nil }
        let variantIndex = self.variantIndex(forMessage: messageId)
        let variant = variantIndex.flatMap { delivery.content.variants?[$0].name }
        let textSet = textSets[variantIndex ?? 0]
        let language = textSet.languages.tag(forDevice: subscription.osLanguage)
        let texts = language.flatMap { textSet.languageTexts[$0] } ?? textSet.texts
        let render = { (template: MessageTemplate?) -> String? in
            template.map { $0.render(userKey: subscription.userKey, params: subscription.params) }
        }
        let variables = self.variables.filter { app.variables.contains($0.name) }.map {
            ($0.name, $0.template.render(userKey: subscription.userKey, params: subscription.params))
        }
        func failed(_ reason: String) -> PlannedMessage {
            .failed(
                MessageFailed(
                    message: MessageReference(
                        messageId: messageId, broadLogId: broadLogId, deliveryId: delivery.deliveryId, appId: app.appId,
                        tokenDigest: TokenDigest.of(subscription.registrationToken), platform: app.platform, plannedAt: plannedAt,
                        language: language, variant: variant),
                    failureType: "soft", reason: reason, attempts: 0, failedAt: plannedAt
                ))
        }
        if app.platform == .ios {
            let built = apnsPayload(
                broadLogId: broadLogId, title: render(texts.title), subtitle: render(texts.subtitle), body: render(texts.body), variables: variables)
            let bytes = built.payload.utf8.count
            guard bytes <= Self.maximumPayloadBytes else { return (failed("payload-too-large"), bytes) }
            let message: PlannedMessage = .apns(
                APNSMessagePlanned(
                    messageId: messageId, broadLogId: broadLogId, deliveryId: delivery.deliveryId, appId: app.appId,
                    registrationToken: subscription.registrationToken, environment: app.environment,
                    credential: app.credential, topic: app.bundleId ?? "", pushType: built.silent ? "background" : "alert",
                    priority: built.silent ? 5 : 10, collapseId: delivery.content.ios?.collapseId,
                    payload: built.payload, validUntil: delivery.validUntil, attempt: 1, plannedAt: plannedAt,
                    throttlePerSecond: delivery.throttlePerSecond, language: language, variant: variant
                ))
            return (message, bytes)
        } else {
            if variables.contains(where: { Self.reservedFCMKeys.contains($0.0) || $0.0.hasPrefix("google.") || $0.0.hasPrefix("gcm.") }) {
                return (failed("reserved-key"), 0)
            }
            let built = fcmMessage(
                broadLogId: broadLogId, token: subscription.registrationToken, title: render(texts.title), subtitle: render(texts.subtitle),
                body: render(texts.body),
                variables: variables,
                plannedAt: plannedAt)
            guard built.contentBytes <= Self.maximumPayloadBytes else { return (failed("payload-too-large"), built.contentBytes) }
            let message: PlannedMessage = .fcm(
                FCMMessagePlanned(
                    messageId: messageId, broadLogId: broadLogId, deliveryId: delivery.deliveryId, appId: app.appId,
                    registrationToken: subscription.registrationToken, projectId: app.fcmProjectId ?? "",
                    credential: app.credential, message: built.message, validUntil: delivery.validUntil, attempt: 1, plannedAt: plannedAt,
                    throttlePerSecond: delivery.throttlePerSecond, language: language, variant: variant
                ))
            return (message, built.contentBytes)
        }
    }

    /// The APNs JSON payload: `aps`, then `_mId`, `_dId` and the app's variables beside it. A
    /// badge or a sound without alert text makes a badge- or sound-only notification; a silent
    /// push (`content-available` and no alert text) drops both.
    func apnsPayload(broadLogId: Int32, title: String?, subtitle: String?, body: String?, variables: [(String, String)]) -> (payload: String, silent: Bool) {
        let ios = delivery.content.ios
        let hasAlert = title != nil || subtitle != nil || body != nil
        let silent = !hasAlert && ios?.contentAvailable == true
        var json = EventJSONWriter(capacity: 512, controlCharacters: .unicode)
        json.object { json in
            json.object("aps") { aps in
                if hasAlert {
                    aps.object("alert") { alert in
                        alert.string("title", title)
                        alert.string("subtitle", subtitle)
                        alert.string("body", body)
                    }
                }
                if !silent {
                    if let badge = ios?.badge { aps.int("badge", badge) }
                    switch ios?.sound {
                    case .named(let name): aps.string("sound", name)
                    case .dictionary(let name, let critical, let volume):
                        aps.object("sound") { sound in
                            if let critical { sound.int("critical", critical ? 1 : 0) }
                            sound.string("name", name)
                            if let volume { sound.number("volume", volume) }
                        }
                    case nil: break
                    }
                }
                aps.string("category", ios?.category)
                aps.string("thread-id", ios?.threadId)
                if ios?.mutableContent == true, hasAlert { aps.int("mutable-content", 1) }
                if ios?.contentAvailable == true { aps.int("content-available", 1) }
                if hasAlert { aps.string("interruption-level", ios?.interruptionLevel) }
                if let score = ios?.relevanceScore { aps.number("relevance-score", score) }
            }
            json.string("_mId", String(broadLogId))
            json.string("_dId", delivery.deliveryId)
            for (name, value) in variables { json.string(key: name, value) }
        }
        return (String(decoding: json.bytes, as: UTF8.self), silent)
    }

    /// The FCM HTTP v1 `message` object and the size of what counts against the 4096-byte limit
    /// (the `data`, `notification` and `android.notification` objects). In data mode the texts
    /// are data keys (`title`, `subtitle`, `_msg`); in notification mode FCM shows `title` and
    /// `body` with the notification options of `android.notification`.
    func fcmMessage(broadLogId: Int32, token: String, title: String?, subtitle: String?, body: String?, variables: [(String, String)], plannedAt: Date) -> (
        message: String, contentBytes: Int
    ) {
        let android = delivery.content.android
        let notificationMode = android?.mode == "notification"
        let ttl = max(0, min(Int(delivery.validUntil.timeIntervalSince(plannedAt).rounded(.down)), Int(DeliveryRequestValidator.Limits.maximumValidity)))
        var contentBytes = 0
        var json = EventJSONWriter(capacity: 1024, controlCharacters: .unicode)
        json.object { json in
            json.string("token", token)
            contentBytes += json.object("data") { data in
                data.string("_mId", String(broadLogId))
                data.string("_dId", delivery.deliveryId)
                if !notificationMode {
                    data.string("_msg", body)
                    data.string("title", title)
                    data.string("subtitle", subtitle)
                }
                for (name, value) in variables { data.string(key: name, value) }
            }
            if notificationMode {
                contentBytes += json.object("notification") { notification in
                    notification.string("title", title)
                    notification.string("body", body)
                }
            }
            json.object("android") { config in
                config.string("priority", android?.priority ?? "high")
                config.string("ttl", "\(ttl)s")
                config.string("collapse_key", android?.collapseKey)
                if notificationMode, let android, android.channelId != nil || !android.notificationOptions.isEmpty {
                    contentBytes += config.object("notification") { notification in
                        notification.string("channel_id", android.channelId)
                        notification.string("image", android.image)
                        notification.string("icon", android.icon)
                        notification.string("color", android.color)
                        notification.string("sound", android.sound)
                        notification.string("tag", android.tag)
                        notification.string("click_action", android.clickAction)
                    }
                }
            }
        }
        return (String(decoding: json.bytes, as: UTF8.self), contentBytes)
    }
}
