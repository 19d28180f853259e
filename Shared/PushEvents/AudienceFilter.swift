import Foundation

/// A delivery request's targeting conditions (`audience.filter`, contract version 1,
/// docs/delivery-requests.md "Targeting"): conditions on a device's subscription parameters
/// and on its own fields, combined by `all`, `any` and `not` groups.
///
/// In JSON a node is one of `{"all": [node, ...]}`, `{"any": [node, ...]}`, `{"not": node}` or
/// a condition object (`{"param": "tier", "op": "in", "values": ["gold", "silver"]}`). The
/// planner checks the tree (`DeliveryRequestValidator`) and compiles it to SQL whose values are
/// all bound parameters.
package indirect enum AudienceFilter: Sendable, Hashable, Codable {
    case all([AudienceFilter])
    case any([AudienceFilter])
    case not(AudienceFilter)
    case condition(AudienceCondition)

    private struct GroupKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
        static let all = GroupKey(stringValue: "all")
        static let any = GroupKey(stringValue: "any")
        static let not = GroupKey(stringValue: "not")
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: GroupKey.self)
        let groups = container.allKeys.filter { ["all", "any", "not"].contains($0.stringValue) }
        guard let group = groups.first else {
            self = .condition(try AudienceCondition(from: decoder))
            return
        }
        guard container.allKeys.count == 1 else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "a group has exactly one of all, any, not and nothing else"))
        }
        switch group.stringValue {
        case "all": self = .all(try container.decode([AudienceFilter].self, forKey: .all))
        case "any": self = .any(try container.decode([AudienceFilter].self, forKey: .any))
        default: self = .not(try container.decode(AudienceFilter.self, forKey: .not))
        }
    }

    package func encode(to encoder: any Encoder) throws {
        switch self {
        case .all(let nodes):
            var container = encoder.container(keyedBy: GroupKey.self)
            try container.encode(nodes, forKey: .all)
        case .any(let nodes):
            var container = encoder.container(keyedBy: GroupKey.self)
            try container.encode(nodes, forKey: .any)
        case .not(let node):
            var container = encoder.container(keyedBy: GroupKey.self)
            try container.encode(node, forKey: .not)
        case .condition(let condition):
            try condition.encode(to: encoder)
        }
    }
}

/// One condition of an `AudienceFilter`: a subscription parameter (`param`) or a device field
/// (`device`), an operator and its value or values.
package struct AudienceCondition: Codable, Sendable, Hashable {
    /// A subscription parameter's name (as the app declares it).
    package var param: String?
    /// A device field: `app`, `platform`, `osName`, `osVersion`, `osLanguage`, `userKey`,
    /// `registeredAt`, `updatedAt`.
    package var device: String?
    /// `=`, `!=`, `in`, `not in`, `<`, `<=`, `>`, `>=`, `between`, `exists`, `not exists`,
    /// `starts with`, `in the last`.
    package var op: String
    package var value: ScalarValue?
    package var values: [ScalarValue]?
    /// How a parameter is compared: `string`, `integer`, `decimal`, `boolean` or `date`. A
    /// request may leave it out: the planner takes the type the targeted apps declare (string
    /// when none does) and writes it into the accepted delivery, so that the delivery is planned
    /// as it was checked whatever the apps declare later.
    package var type: String?

    package init(
        param: String? = nil, device: String? = nil, op: String, value: ScalarValue? = nil, values: [ScalarValue]? = nil, type: String? = nil
    ) {
        self.param = param
        self.device = device
        self.op = op
        self.value = value
        self.values = values
        self.type = type
    }
}
