import Foundation

/// The upstream contract on `push.delivery-requests` (version 1): what CRMs and journey tools
/// publish to ask for a delivery. Documented in docs/delivery-requests.md with a JSON Schema
/// (docs/schemas/delivery-request.v1.schema.json). Unknown fields are ignored so that producers
/// may add their own bookkeeping; every field below is checked by the planner.
///
/// This is not an `EventEnvelope`: upstream systems write the flat JSON object of the contract.
package struct DeliveryRequest: Codable, Sendable, Hashable {
    package var type: String
    package var version: Int
    package var requestId: String
    package var service: String
    /// Integration keys of a subset of the service's apps; nil = every app of the service.
    package var apps: [String]?
    package var audience: Audience
    package var content: Content
    package var validUntil: Date?
    package var sendAt: Date?
    package var throttle: Throttle?
    /// A proof: only these recipients get the message, whatever the audience says.
    package var proof: Proof?
    /// A stored template whose content the request's `content` overrides field by field.
    package var template: TemplateReference?
    /// `transactional` or `bulk` (absent: bulk), as written: the validator names a wrong value
    /// (`DeliveryPriority`).
    package var priority: String?

    package init(
        requestId: String, service: String, apps: [String]? = nil, audience: Audience, content: Content,
        validUntil: Date? = nil, sendAt: Date? = nil, throttle: Throttle? = nil, proof: Proof? = nil,
        priority: DeliveryPriority? = nil
    ) {
        self.type = "DeliveryRequested"
        self.version = 1
        self.requestId = requestId
        self.service = service
        self.apps = apps
        self.audience = audience
        self.content = content
        self.validUntil = validUntil
        self.sendAt = sendAt
        self.throttle = throttle
        self.proof = proof
        self.priority = priority?.rawValue
    }

    /// A service's stored definition by name, and a version (the latest when absent): a template
    /// or a segment.
    package struct VersionedReference: Codable, Sendable, Hashable {
        package var name: String
        package var version: Int?

        package init(name: String, version: Int? = nil) {
            self.name = name
            self.version = version
        }
    }

    package typealias TemplateReference = VersionedReference
    package typealias SegmentReference = VersionedReference

    /// The test recipients of a proof (Campaign's "proof" delivery): user keys and registration
    /// tokens of the service's apps, at most 100 in all.
    package struct Proof: Codable, Sendable, Hashable {
        package var userKeys: [String]?
        package var registrationTokens: [String]?
        /// How many user keys and tokens the proof named, in place of the lists, where recipients
        /// are only counted (`DeliveryAccepted` version 2 on the topic, `push.deliveries`):
        /// never read from a request.
        package var userKeyCount: Int?
        package var registrationTokenCount: Int?

        package init(userKeys: [String]? = nil, registrationTokens: [String]? = nil) {
            self.userKeys = userKeys
            self.registrationTokens = registrationTokens
        }

        /// The recipients as counts only (what a person's erasure cannot reach is not written).
        package var counted: Proof {
            var proof = Proof()
            proof.userKeyCount = userKeys?.count ?? userKeyCount
            proof.registrationTokenCount = registrationTokens?.count ?? registrationTokenCount
            return proof
        }
    }

    /// Exactly one of the three forms is set in a valid request.
    package struct Audience: Codable, Sendable, Hashable {
        package var all: Bool?
        package var userKeys: [String]?
        /// Equality on subscription parameters (values compared as strings).
        package var `where`: [String: ScalarValue]?
        /// Conditions on parameters and device fields in `all` / `any` / `not` groups
        /// (`AudienceFilter`).
        package var filter: AudienceFilter?
        /// A stored segment of the service by name (and version, the latest when absent): its
        /// conditions become `filter` when the request is checked, and the accepted delivery
        /// keeps both, with the version used.
        package var segment: SegmentReference?

        /// How many user keys a `userKeys` audience named, in place of the list, where recipients
        /// are only counted (`DeliveryAccepted` version 2 on the topic, `push.deliveries`): never
        /// read from a request.
        package var userKeyCount: Int?

        package init(
            all: Bool? = nil, userKeys: [String]? = nil, where conditions: [String: ScalarValue]? = nil, filter: AudienceFilter? = nil,
            segment: SegmentReference? = nil
        ) {
            self.all = all
            self.userKeys = userKeys
            self.where = conditions
            self.filter = filter
            self.segment = segment
        }

        package static let everyone = Audience(all: true)

        /// Whether the audience is a list of user keys, named or only counted. A counted list (a
        /// planned delivery's state) targets nobody: it must never read as "every device".
        package var isUserKeyList: Bool { userKeys != nil || userKeyCount != nil }

        /// The audience with a user key list replaced by its count (the other forms name nobody).
        package var counted: Audience {
            guard let userKeys else { return self }
            var audience = Audience()
            audience.userKeyCount = userKeys.count
            return audience
        }
    }

    package struct Content: Codable, Sendable, Hashable {
        package var title: String?
        package var subtitle: String?
        package var body: String?
        package var variables: [String: String]?
        package var ios: IOS?
        package var android: Android?
        /// The texts per language, by BCP 47 tag (`fr`, `pt-BR`): each device gets the texts of
        /// the tag its `osLanguage` matches (its own tag, then its language alone, then another
        /// region of its language), and `title`, `subtitle`, `body` above when none does
        /// (`ContentLanguages` in the planner; docs/delivery-requests.md, "Content per
        /// language").
        package var languages: [String: Texts]?
        /// A/B variants: 2 to 5 sets of texts with the share of devices each gets, in place of
        /// `title`, `subtitle`, `body` and `languages` (a variant carries its own). Which variant
        /// a device gets is a function of its message id, so a replay gives it the same one
        /// (`ContentVariants` in the planner; docs/delivery-requests.md, "A/B variants").
        package var variants: [Variant]?

        package init(
            title: String? = nil, subtitle: String? = nil, body: String? = nil, variables: [String: String]? = nil, ios: IOS? = nil, android: Android? = nil,
            languages: [String: Texts]? = nil, variants: [Variant]? = nil
        ) {
            self.title = title
            self.subtitle = subtitle
            self.body = body
            self.variables = variables
            self.ios = ios
            self.android = android
            self.languages = languages
            self.variants = variants
        }
    }

    /// One A/B variant: its name (recorded on each message, in `push.broad_log.variant` and the
    /// report), the per cent of the audience that gets it, and its texts (as the content's own:
    /// `title`, `subtitle`, `body`, and texts per language).
    package struct Variant: Codable, Sendable, Hashable {
        package var name: String
        package var share: Int
        package var title: String?
        package var subtitle: String?
        package var body: String?
        package var languages: [String: Texts]?

        package init(
            name: String, share: Int, title: String? = nil, subtitle: String? = nil, body: String? = nil, languages: [String: Texts]? = nil
        ) {
            self.name = name
            self.share = share
            self.title = title
            self.subtitle = subtitle
            self.body = body
            self.languages = languages
        }
    }

    /// One language's texts: they replace the default `title`, `subtitle` and `body` together
    /// (a text the language leaves out is not shown, never taken from another language).
    package struct Texts: Codable, Sendable, Hashable {
        package var title: String?
        package var subtitle: String?
        package var body: String?

        package init(title: String? = nil, subtitle: String? = nil, body: String? = nil) {
            self.title = title
            self.subtitle = subtitle
            self.body = body
        }
    }

    package struct IOS: Codable, Sendable, Hashable {
        package var badge: Int?
        package var sound: Sound?
        package var category: String?
        package var threadId: String?
        package var mutableContent: Bool?
        package var contentAvailable: Bool?
        package var interruptionLevel: String?
        package var relevanceScore: Double?
        package var collapseId: String?

        package init(
            badge: Int? = nil, sound: Sound? = nil, category: String? = nil, threadId: String? = nil,
            mutableContent: Bool? = nil, contentAvailable: Bool? = nil, interruptionLevel: String? = nil,
            relevanceScore: Double? = nil, collapseId: String? = nil
        ) {
            self.badge = badge
            self.sound = sound
            self.category = category
            self.threadId = threadId
            self.mutableContent = mutableContent
            self.contentAvailable = contentAvailable
            self.interruptionLevel = interruptionLevel
            self.relevanceScore = relevanceScore
            self.collapseId = collapseId
        }
    }

    /// The APNs `sound`: a sound file name (`default`, or one the app declares), or the
    /// critical-alert dictionary `{critical, name, volume}`. Written in the request as a string
    /// or as that object, and kept in the same form.
    package enum Sound: Codable, Sendable, Hashable, ExpressibleByStringLiteral {
        case named(String)
        /// `critical` (a critical alert: plays even when muted, needs Apple's entitlement),
        /// `volume` between 0 and 1.
        case dictionary(name: String, critical: Bool?, volume: Double?)

        package init(stringLiteral name: String) {
            self = .named(name)
        }

        package var name: String {
            switch self {
            case .named(let name), .dictionary(let name, _, _): name
            }
        }

        private enum Key: String, CodingKey {
            case name, critical, volume
        }

        package init(from decoder: any Decoder) throws {
            if let name = try? decoder.singleValueContainer().decode(String.self) {
                self = .named(name)
                return
            }
            let object: KeyedDecodingContainer<Key>
            do {
                object = try decoder.container(keyedBy: Key.self)
            } catch {
                throw DecodingError.typeMismatch(
                    Sound.self, .init(codingPath: decoder.codingPath, debugDescription: "expected a sound name or an object {critical, name, volume}"))
            }
            self = .dictionary(
                name: try object.decode(String.self, forKey: .name), critical: try object.decodeIfPresent(Bool.self, forKey: .critical),
                volume: try object.decodeIfPresent(Double.self, forKey: .volume))
        }

        package func encode(to encoder: any Encoder) throws {
            switch self {
            case .named(let name):
                var single = encoder.singleValueContainer()
                try single.encode(name)
            case .dictionary(let name, let critical, let volume):
                var object = encoder.container(keyedBy: Key.self)
                try object.encode(name, forKey: .name)
                try object.encodeIfPresent(critical, forKey: .critical)
                try object.encodeIfPresent(volume, forKey: .volume)
            }
        }
    }

    package struct Android: Codable, Sendable, Hashable {
        /// `data` (default: the SDK builds the notification from `_msg` and `title`) or
        /// `notification` (FCM displays it).
        package var mode: String?
        /// `high` (default) or `normal`.
        package var priority: String?
        package var channelId: String?
        package var collapseKey: String?
        /// Notification mode only (`android.notification` of the FCM message): an image URL
        /// (http or https), the small icon's drawable name, the icon colour `#rrggbb`, a sound
        /// resource name (`default` for the device's), a tag (a notification with the same tag
        /// replaces the previous one), the activity's intent filter action opened on click.
        package var image: String?
        package var icon: String?
        package var color: String?
        package var sound: String?
        package var tag: String?
        package var clickAction: String?

        package init(
            mode: String? = nil, priority: String? = nil, channelId: String? = nil, collapseKey: String? = nil, image: String? = nil, icon: String? = nil,
            color: String? = nil, sound: String? = nil, tag: String? = nil, clickAction: String? = nil
        ) {
            self.mode = mode
            self.priority = priority
            self.channelId = channelId
            self.collapseKey = collapseKey
            self.image = image
            self.icon = icon
            self.color = color
            self.sound = sound
            self.tag = tag
            self.clickAction = clickAction
        }

        /// The notification-mode options that are set, by their request name.
        package var notificationOptions: [(name: String, value: String)] {
            [("image", image), ("icon", icon), ("color", color), ("sound", sound), ("tag", tag), ("clickAction", clickAction)].compactMap { option in
                option.1.map { (option.0, $0) }
            }
        }
    }

    package struct Throttle: Codable, Sendable, Hashable {
        package var perSecond: Int

        package init(perSecond: Int) {
            self.perSecond = perSecond
        }
    }
}

/// A JSON string, number or boolean, compared as its text (`3233`, `true`, `"gold"`).
package struct ScalarValue: Codable, Sendable, Hashable, ExpressibleByStringLiteral {
    package var text: String

    package init(_ text: String) { self.text = text }
    package init(stringLiteral value: String) { self.text = value }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let string = try? container.decode(String.self) {
            text = string
        } else if let bool = try? container.decode(Bool.self) {
            text = bool ? "true" : "false"
        } else if let integer = try? container.decode(Int64.self) {
            text = String(integer)
        } else if let number = try? container.decode(Double.self) {
            text = String(number)
        } else {
            throw DecodingError.typeMismatch(String.self, .init(codingPath: decoder.codingPath, debugDescription: "expected a string, number or boolean"))
        }
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(text)
    }
}
