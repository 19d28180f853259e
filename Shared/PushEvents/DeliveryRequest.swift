import Foundation

/// The upstream contract on `push.delivery-requests` (version 1): what CRMs and journey tools
/// publish to ask for a delivery. Documented in docs/delivery-requests.md with a JSON Schema
/// (docs/schemas/delivery-request.v1.schema.json). Unknown fields are ignored so that producers
/// may add their own bookkeeping; every field below is checked by the planner.
///
/// This is not an `EventEnvelope`: upstream systems write the flat JSON object of the contract.
public struct DeliveryRequest: Codable, Sendable, Hashable {
    public var type: String
    public var version: Int
    public var requestId: String
    public var service: String
    /// Integration keys of a subset of the service's apps; nil = every app of the service.
    public var apps: [String]?
    public var audience: Audience
    public var content: Content
    public var validUntil: Date?
    public var sendAt: Date?
    public var throttle: Throttle?

    public init(
        requestId: String, service: String, apps: [String]? = nil, audience: Audience, content: Content,
        validUntil: Date? = nil, sendAt: Date? = nil, throttle: Throttle? = nil
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
    }

    /// Exactly one of the three forms is set in a valid request.
    public struct Audience: Codable, Sendable, Hashable {
        public var all: Bool?
        public var userKeys: [String]?
        /// Equality on subscription parameters (values compared as strings).
        public var `where`: [String: ScalarValue]?

        public init(all: Bool? = nil, userKeys: [String]? = nil, where conditions: [String: ScalarValue]? = nil) {
            self.all = all
            self.userKeys = userKeys
            self.where = conditions
        }

        public static let everyone = Audience(all: true)
    }

    public struct Content: Codable, Sendable, Hashable {
        public var title: String?
        public var subtitle: String?
        public var body: String?
        public var variables: [String: String]?
        public var ios: IOS?
        public var android: Android?

        public init(title: String? = nil, subtitle: String? = nil, body: String? = nil, variables: [String: String]? = nil, ios: IOS? = nil, android: Android? = nil) {
            self.title = title
            self.subtitle = subtitle
            self.body = body
            self.variables = variables
            self.ios = ios
            self.android = android
        }
    }

    public struct IOS: Codable, Sendable, Hashable {
        public var badge: Int?
        public var sound: String?
        public var category: String?
        public var threadId: String?
        public var mutableContent: Bool?
        public var contentAvailable: Bool?
        public var interruptionLevel: String?
        public var relevanceScore: Double?
        public var collapseId: String?

        public init(
            badge: Int? = nil, sound: String? = nil, category: String? = nil, threadId: String? = nil,
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

    public struct Android: Codable, Sendable, Hashable {
        /// `data` (default: the SDK builds the notification from `_msg` and `title`) or
        /// `notification` (FCM displays it).
        public var mode: String?
        /// `high` (default) or `normal`.
        public var priority: String?
        public var channelId: String?
        public var collapseKey: String?

        public init(mode: String? = nil, priority: String? = nil, channelId: String? = nil, collapseKey: String? = nil) {
            self.mode = mode
            self.priority = priority
            self.channelId = channelId
            self.collapseKey = collapseKey
        }
    }

    public struct Throttle: Codable, Sendable, Hashable {
        public var perSecond: Int

        public init(perSecond: Int) {
            self.perSecond = perSecond
        }
    }
}

/// A JSON string, number or boolean, compared as its text (`3233`, `true`, `"gold"`).
public struct ScalarValue: Codable, Sendable, Hashable, ExpressibleByStringLiteral {
    public var text: String

    public init(_ text: String) { self.text = text }
    public init(stringLiteral value: String) { self.text = value }

    public init(from decoder: any Decoder) throws {
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

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(text)
    }
}
