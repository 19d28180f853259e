import Foundation
import PushEvents

/// The steps of `DeliveryRequestValidator`, one rule group each; every step throws the
/// rejection of the first rule it finds broken.
extension DeliveryRequestValidator {
    /// A rejection of `request` (its requestId is readable once `parse` passed).
    static func rejection(_ request: DeliveryRequest, _ reason: String) -> DeliveryRejection {
        DeliveryRejection(requestId: request.requestId, reason: reason)
    }

    /// The envelope: the type and contract version this planner reads, and a requestId that
    /// can key a delivery (printable, no spaces, bounded).
    static func checkEnvelope(_ request: DeliveryRequest, readableId: String?) throws(DeliveryRejection) {
        guard request.type == "DeliveryRequested" else {
            throw DeliveryRejection(requestId: readableId, reason: "type must be DeliveryRequested")
        }
        guard request.version == 1 else {
            throw DeliveryRejection(requestId: readableId, reason: "version \(request.version) is not supported; this planner reads version 1")
        }
        guard Limits.requestIdLength.contains(request.requestId.count),
            request.requestId.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7F })
        else {
            throw DeliveryRejection(requestId: nil, reason: "requestId must be 1 to 200 printable characters without spaces")
        }
    }

    /// The apps the request targets: the ones it names by integration key (each once, in the
    /// request's order), or every app of the service; never none.
    static func targetedApps(of request: DeliveryRequest, in service: PlanningService) throws(DeliveryRejection) -> [PlanningApp] {
        var apps = service.apps
        if let keys = request.apps {
            guard !keys.isEmpty else { throw rejection(request, "apps is empty: leave it out to target every app of the service") }
            var chosen: [PlanningApp] = []
            for key in keys {
                guard let app = service.apps.first(where: { $0.integrationKey == key }) else {
                    throw rejection(request, "unknown app '\(key.prefix(128))' in service '\(service.name)'")
                }
                if !chosen.contains(app) { chosen.append(app) }
            }
            apps = chosen
        }
        guard !apps.isEmpty else { throw rejection(request, "service '\(service.name)' has no apps") }
        return apps
    }

    /// The audience: exactly one form (all, userKeys, where, filter), not empty, within its bound.
    static func checkAudience(of request: DeliveryRequest) throws(DeliveryRejection) {
        let audience = request.audience
        // A segment is resolved into its filter before this check (DeliverySegments).
        let forms = [audience.all != nil, audience.userKeys != nil, audience.where != nil, audience.filter != nil || audience.segment != nil]
            .filter { $0 }.count
        guard forms == 1 else { throw rejection(request, "audience must have exactly one of all, userKeys, where, filter, segment") }
        if let all = audience.all, !all { throw rejection(request, "audience.all must be true (or use userKeys, where or filter)") }
        if let keys = audience.userKeys {
            guard !keys.isEmpty else { throw rejection(request, "audience.userKeys is empty") }
            guard Limits.userKeys.contains(keys.count) else {
                throw rejection(request, "audience.userKeys has more than 100000 keys: use where, or split the request")
            }
        }
        if let conditions = audience.where {
            guard !conditions.isEmpty else { throw rejection(request, "audience.where is empty") }
            guard Limits.whereConditions.contains(conditions.count) else { throw rejection(request, "audience.where has more than 20 conditions") }
        }
    }

    /// The audience's filter checked against the targeted apps (`AudienceFilterRules`), with its
    /// values canonical and its parameters typed: what the accepted delivery carries.
    static func checkedFilter(of request: DeliveryRequest, apps: [PlanningApp]) throws(DeliveryRejection) -> AudienceFilter? {
        guard let filter = request.audience.filter else { return nil }
        do {
            return try AudienceFilterRules.checked(filter, apps: apps)
        } catch {
            throw rejection(request, error.reason)
        }
    }

    /// The texts: each within the providers' limit, and a body whenever the message shows
    /// text (a silent or a badge- or sound-only iOS push, or an Android data message, may go
    /// without one).
    static func checkTexts(of request: DeliveryRequest, apps: [PlanningApp]) throws(DeliveryRejection) {
        let content = request.content
        if let variants = content.variants {
            try checkVariants(variants, of: request, apps: apps)
            return
        }
        for (field, text) in [("title", content.title), ("subtitle", content.subtitle), ("body", content.body)] {
            if let text, text.utf8.count > Limits.textBytes { throw rejection(request, "content.\(field) is longer than 4096 bytes") }
        }
        let body = content.body.flatMap { $0.isEmpty ? nil : $0 }
        if body == nil {
            if content.title != nil || content.subtitle != nil { throw rejection(request, "content.body is required when there is a title or subtitle") }
            let ios = content.ios
            if apps.contains(where: { $0.platform == .ios }), ios?.contentAvailable != true, ios?.badge == nil, ios?.sound == nil {
                throw rejection(
                    request,
                    "content.body is required unless the iOS push is silent (ios.contentAvailable true) or only sets a badge or a sound (ios.badge, ios.sound)")
            }
            if apps.contains(where: { $0.platform == .android }), (content.android?.mode ?? "data") != "data" {
                throw rejection(request, "content.body is required for an Android notification message (android.mode notification)")
            }
        }
        try checkLanguages(of: request)
    }

    /// `content.languages`: 1 to 50 well-formed tags, none twice (compared without case), each
    /// with a body and texts within the limit.
    static func checkLanguages(of request: DeliveryRequest) throws(DeliveryRejection) {
        guard let languages = request.content.languages else { return }
        guard Limits.languages.contains(languages.count) else {
            throw rejection(request, "content.languages must have 1 to \(Limits.languages.upperBound) languages (has \(languages.count))")
        }
        var seen: [String: String] = [:]
        for (tag, texts) in languages.sorted(by: { $0.key < $1.key }) {
            guard ContentLanguages.isWellFormed(tag) else {
                throw rejection(
                    request,
                    "content.languages: '\(tag.prefix(64))' is not a language tag of the form language[-Script][-REGION] (fr, pt-BR, zh-Hant-TW, es-419)")
            }
            if let other = seen[ContentLanguages.compared(tag)] {
                throw rejection(request, "content.languages: '\(other)' and '\(tag)' are the same language")
            }
            seen[ContentLanguages.compared(tag)] = tag
            for (field, text) in [("title", texts.title), ("subtitle", texts.subtitle), ("body", texts.body)] {
                if let text, text.utf8.count > Limits.textBytes { throw rejection(request, "content.languages.\(tag).\(field) is longer than 4096 bytes") }
            }
            guard let body = texts.body, !body.isEmpty else {
                throw rejection(request, "content.languages.\(tag).body is required (a language's texts replace the default title, subtitle and body together)")
            }
        }
    }

    /// `content.variants`: 2 to 5 variants in place of the content's own texts, each with a
    /// well-formed name used once (compared without case), a share from 1 to 99 per cent, the
    /// shares adding up to 100, and texts that pass the content's own rules (named by the
    /// variant's path: `content.variants[1].body`).
    static func checkVariants(_ variants: [DeliveryRequest.Variant], of request: DeliveryRequest, apps: [PlanningApp]) throws(DeliveryRejection) {
        guard Limits.variants.contains(variants.count) else {
            throw rejection(
                request, "content.variants must have \(Limits.variants.lowerBound) to \(Limits.variants.upperBound) variants (has \(variants.count))")
        }
        let content = request.content
        for (field, set) in [
            ("title", content.title != nil), ("subtitle", content.subtitle != nil), ("body", content.body != nil), ("languages", content.languages != nil),
        ]
        where set {
            throw rejection(request, "content.\(field) must be left out with content.variants: each variant carries its own texts")
        }
        var seen: Set<String> = []
        for (index, variant) in variants.enumerated() {
            let path = "content.variants[\(index)]"
            guard ContentVariants.isWellFormedName(variant.name) else {
                throw rejection(
                    request, "\(path).name '\(variant.name.prefix(64))' must be 1 to 32 letters, digits, _ or -, starting with a letter or a digit")
            }
            guard seen.insert(variant.name.lowercased()).inserted else {
                throw rejection(request, "\(path).name '\(variant.name)' is used by another variant (names compare without case)")
            }
            guard (1...99).contains(variant.share) else { throw rejection(request, "\(path).share must be a whole per cent from 1 to 99") }
            var alone = request
            alone.content.variants = nil
            alone.content.title = variant.title
            alone.content.subtitle = variant.subtitle
            alone.content.body = variant.body
            alone.content.languages = variant.languages
            do {
                try checkTexts(of: alone, apps: apps)
            } catch {
                throw rejection(
                    request, error.reason.hasPrefix("content.") ? path + "." + error.reason.dropFirst("content.".count) : "\(path): \(error.reason)")
            }
        }
        let total = variants.reduce(0) { $0 + $1.share }
        guard total == 100 else { throw rejection(request, "content.variants' shares add up to \(total), not 100") }
    }

    /// The templates: every variable declared by at least one targeted app, and every text
    /// and variable a template that parses (checked here so that a fan-out never meets a bad
    /// one).
    static func checkTemplates(of request: DeliveryRequest, apps: [PlanningApp]) throws(DeliveryRejection) {
        let content = request.content
        var templates: [(String, String)] = [("title", content.title ?? ""), ("subtitle", content.subtitle ?? ""), ("body", content.body ?? "")]
        let declared = apps.reduce(into: Set<String>()) { $0.formUnion($1.variables) }
        for (name, value) in (content.variables ?? [:]).sorted(by: { $0.key < $1.key }) {
            guard declared.contains(name) else {
                throw rejection(
                    request, "variable '\(name.prefix(64))' is not declared by any targeted app (declared: \(declared.sorted().joined(separator: ", ")))")
            }
            templates.append(("variables.\(name)", value))
        }
        func add(_ prefix: String, _ languages: [String: DeliveryRequest.Texts]?) {
            for (tag, texts) in (languages ?? [:]).sorted(by: { $0.key < $1.key }) {
                templates += [
                    ("\(prefix)languages.\(tag).title", texts.title ?? ""), ("\(prefix)languages.\(tag).subtitle", texts.subtitle ?? ""),
                    ("\(prefix)languages.\(tag).body", texts.body ?? ""),
                ]
            }
        }
        add("", content.languages)
        for (index, variant) in (content.variants ?? []).enumerated() {
            let prefix = "variants[\(index)]."
            templates += [("\(prefix)title", variant.title ?? ""), ("\(prefix)subtitle", variant.subtitle ?? ""), ("\(prefix)body", variant.body ?? "")]
            add(prefix, variant.languages)
        }
        for (field, text) in templates {
            do {
                _ = try MessageTemplate(parsing: text)
            } catch {
                throw rejection(request, "content.\(field): \(error)")
            }
        }
    }

    /// The APNs options: values APNs accepts (badge, interruption level, relevance score,
    /// collapse id, sound), and a sound every targeted iOS app declares (`default` always).
    static func checkIOSOptions(of request: DeliveryRequest, apps: [PlanningApp]) throws(DeliveryRejection) {
        guard let ios = request.content.ios else { return }
        if let badge = ios.badge, badge < 0 { throw rejection(request, "content.ios.badge must be 0 or more") }
        if let level = ios.interruptionLevel, !interruptionLevels.contains(level) {
            throw rejection(request, "content.ios.interruptionLevel must be one of passive, active, time-sensitive, critical")
        }
        if let score = ios.relevanceScore, !(0...1).contains(score) { throw rejection(request, "content.ios.relevanceScore must be between 0 and 1") }
        if let collapseId = ios.collapseId, collapseId.utf8.count > Limits.collapseIdBytes || collapseId.isEmpty {
            throw rejection(request, "content.ios.collapseId must be 1 to 64 bytes")
        }
        if let sound = ios.sound { try checkSound(sound, of: request, apps: apps) }
    }

    /// A sound name, not empty and at most 256 bytes; the critical-alert dictionary's volume
    /// between 0 and 1; a name other than `default` declared by each targeted iOS app (a sound
    /// the app does not ship would play nothing).
    static func checkSound(_ sound: DeliveryRequest.Sound, of request: DeliveryRequest, apps: [PlanningApp]) throws(DeliveryRejection) {
        let field = if case .dictionary = sound { "content.ios.sound.name" } else { "content.ios.sound" }
        guard !sound.name.isEmpty, sound.name.utf8.count <= 256 else { throw rejection(request, "\(field) must be 1 to 256 bytes") }
        if case .dictionary(_, _, let volume?) = sound, !(0...1).contains(volume) {
            throw rejection(request, "content.ios.sound.volume must be between 0 and 1")
        }
        guard sound.name != "default" else { return }
        for app in apps where app.platform == .ios && !app.sounds.contains(sound.name) {
            let declared = app.sounds.isEmpty ? "none" : app.sounds.sorted().joined(separator: ", ")
            throw rejection(
                request,
                "\(field) '\(sound.name.prefix(64))' is not declared by iOS app '\(app.integrationKey)' (declared: \(declared); default is always allowed)")
        }
    }

    /// The FCM options: values FCM accepts (mode, priority, collapse key), and a sound every
    /// targeted Android app declares (`default` always): a sound resource the app does not ship
    /// plays nothing, as on iOS.
    static func checkAndroidOptions(of request: DeliveryRequest, apps: [PlanningApp]) throws(DeliveryRejection) {
        guard let android = request.content.android else { return }
        if let mode = android.mode, mode != "data", mode != "notification" { throw rejection(request, "content.android.mode must be data or notification") }
        if let priority = android.priority, priority != "high", priority != "normal" {
            throw rejection(request, "content.android.priority must be high or normal")
        }
        if let key = android.collapseKey, key.isEmpty || key.utf8.count > 64 { throw rejection(request, "content.android.collapseKey must be 1 to 64 bytes") }
        let options = android.notificationOptions
        if let first = options.first, android.mode != "notification" {
            throw rejection(
                request, "content.android.\(first.name) is a notification option: set android.mode to notification (a data message carries no notification)")
        }
        for (name, value) in options where value.isEmpty || value.utf8.count > 1024 {
            throw rejection(request, "content.android.\(name) must be 1 to 1024 bytes")
        }
        if let image = android.image {
            guard let url = URL(string: image), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host?.isEmpty == false else {
                throw rejection(request, "content.android.image must be an http or https URL")
            }
        }
        if let color = android.color {
            let hex = color.utf8.dropFirst()
            guard color.first == "#", hex.count == 6, hex.allSatisfy({ $0 < 0x80 && Character(UnicodeScalar($0)).isHexDigit }) else {
                throw rejection(request, "content.android.color must be #rrggbb")
            }
        }
        if let sound = android.sound, sound != "default" {
            for app in apps where app.platform == .android && !app.sounds.contains(sound) {
                let declared = app.sounds.isEmpty ? "none" : app.sounds.sorted().joined(separator: ", ")
                throw rejection(
                    request,
                    "content.android.sound '\(sound.prefix(64))' is not declared by Android app '\(app.integrationKey)' (declared: \(declared); default is always allowed)"
                )
            }
        }
    }

    /// The catalog's side: each targeted app has what its provider needs to address it (an
    /// iOS app's bundleId, the APNs topic; an Android app's FCM project).
    static func checkProviderSettings(of request: DeliveryRequest, apps: [PlanningApp]) throws(DeliveryRejection) {
        for app in apps where app.platform == .ios && (app.bundleId ?? "").isEmpty {
            throw rejection(request, "iOS app '\(app.integrationKey)' has no bundleId (the APNs topic)")
        }
        for app in apps where app.platform == .android && (app.fcmProjectId ?? "").isEmpty {
            throw rejection(request, "Android app '\(app.integrationKey)' has no fcmProjectId")
        }
    }

    /// When the delivery is sent and until when it is worth delivering: `sendAt` (never in the
    /// past) and `validUntil` (default a day after `sendAt`), which must be after both now and
    /// `sendAt`, and within the 28 days FCM keeps a message.
    static func schedule(of request: DeliveryRequest, now: Date) throws(DeliveryRejection) -> (sendAt: Date, validUntil: Date) {
        let sendAt = max(request.sendAt ?? now, now)
        let validUntil = request.validUntil ?? sendAt.addingTimeInterval(Limits.defaultValidity)
        guard validUntil > now else { throw rejection(request, "validUntil is in the past") }
        guard validUntil > sendAt else { throw rejection(request, "validUntil must be after sendAt") }
        guard validUntil.timeIntervalSince(now) <= Limits.maximumValidity else {
            throw rejection(request, "validUntil is more than 28 days away (FCM keeps a message at most 28 days)")
        }
        return (sendAt, validUntil)
    }

    /// The throttle, when there is one: between 1 and 1,000,000 messages per second.
    static func checkThrottle(of request: DeliveryRequest) throws(DeliveryRejection) {
        if let throttle = request.throttle, !Limits.throttle.contains(throttle.perSecond) {
            throw rejection(request, "throttle.perSecond must be between 1 and 1000000")
        }
    }

    /// The priority, when there is one: `transactional` or `bulk` (absent: bulk).
    static func priority(of request: DeliveryRequest) throws(DeliveryRejection) -> DeliveryPriority {
        guard let text = request.priority else { return .default }
        guard let priority = DeliveryPriority(rawValue: text) else {
            throw rejection(request, "priority must be transactional or bulk, got '\(text.prefix(64))'")
        }
        return priority
    }

    /// A proof names 1 to 100 recipients (user keys and tokens together), none empty.
    static func checkProof(of request: DeliveryRequest) throws(DeliveryRejection) {
        guard let proof = request.proof else { return }
        let recipients = (proof.userKeys ?? []) + (proof.registrationTokens ?? [])
        guard Limits.proofRecipients.contains(recipients.count) else {
            throw rejection(request, "proof must name 1 to 100 recipients (userKeys and registrationTokens together)")
        }
        if recipients.contains(where: \.isEmpty) { throw rejection(request, "proof recipients must not be empty strings") }
    }
}
