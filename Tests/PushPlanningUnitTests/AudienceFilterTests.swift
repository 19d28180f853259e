import Foundation
import PushEvents
import PushTestSupport
import Testing

@testable import PushPlanning

/// `audience.filter`'s rules and what the accepted delivery carries (the SQL it compiles to is
/// checked against the database in TargetingFilterTests).
@Suite("Targeting filter: rules, refusals by path, the accepted tree")
struct AudienceFilterTests {
    static let now = Date(timeIntervalSince1970: 1_795_000_000)
    static let ios = PlanningApp(
        appId: UUID(), integrationKey: "ios-key", platform: .ios, environment: "production", bundleId: "com.example.trips", fcmProjectId: nil,
        variables: [], credential: nil, parameterTypes: ["age": "integer", "tier": "string", "since": "date"])
    static let android = PlanningApp(
        appId: UUID(), integrationKey: "android-key", platform: .android, environment: "production", bundleId: nil, fcmProjectId: "example",
        variables: [], credential: nil, parameterTypes: ["age": "integer", "vip": "boolean", "code": "string"])
    static let service = PlanningService(serviceId: UUID(), name: "neotrips", apps: [ios, android])

    func accepted(_ filter: String, apps: [String]? = nil) throws -> DeliveryAccepted {
        let request = try DeliveryRequestValidator.parse(
            Array(requestJSON(requestId: "f", service: "neotrips", apps: apps, audience: #"{"filter": \#(filter)}"#).utf8))
        return try DeliveryRequestValidator.validate(request, service: Self.service, now: Self.now, deliveryId: "1")
    }

    func reason(_ filter: String, apps: [String]? = nil) -> String? {
        do {
            _ = try accepted(filter, apps: apps)
            return nil
        } catch let rejection as DeliveryRejection {
            return rejection.reason
        } catch {
            return "\(error)"
        }
    }

    @Test("the accepted delivery carries the tree typed and canonical, and reads back from its JSON")
    func acceptedTree() throws {
        let delivery = try accepted(
            #"{"all": [{"param": "age", "op": "between", "values": [18, "30"]}, {"not": {"param": "vip", "op": "=", "value": "TRUE"}},"#
                + #" {"any": [{"device": "osVersion", "op": ">=", "value": "iOS 17.2"}, {"device": "app", "op": "in", "values": ["android-key"]}]},"#
                + #" {"param": "city", "op": "starts with", "value": "Lis"}]}"#)
        let expected = AudienceFilter.all([
            .condition(AudienceCondition(param: "age", op: "between", values: ["18", "30"], type: "integer")),
            .not(.condition(AudienceCondition(param: "vip", op: "=", value: "true", type: "boolean"))),
            .any([
                .condition(AudienceCondition(device: "osVersion", op: ">=", value: "{17,2,0,0}")),
                .condition(AudienceCondition(device: "app", op: "in", values: [ScalarValue(Self.android.appId.uuidString.lowercased())])),
            ]),
            .condition(AudienceCondition(param: "city", op: "starts with", value: "Lis", type: "string")),
        ])
        #expect(delivery.audience.filter == expected)
        let read = try EventJSON.decoder.decode(DeliveryAccepted.self, from: try EventJSON.encoder.encode(delivery))
        #expect(read.audience.filter == expected, "a planner that reads the event plans the same tree")
    }

    @Test("each refusal names the condition by its path in the request")
    func refusals() {
        #expect(
            reason(#"{"all": [{"param": "age", "op": ">", "value": 3}, {"any": [{"device": "os", "op": "=", "value": "x"}]}]}"#)?.hasPrefix(
                "audience.filter.all[1].any[0].device must be one of app, osLanguage, osName, osVersion, platform, registeredAt, updatedAt, userKey") == true)
        #expect(
            reason(#"{"not": {"param": "vip", "op": "<", "value": true}}"#)?.hasPrefix("audience.filter.not.op '<' does not apply to parameter 'vip' (boolean)")
                == true)
        #expect(reason(#"{"param": "age", "op": "in", "value": 3}"#) == "audience.filter: in takes values (a list)")
        #expect(reason(#"{"param": "age", "op": "=", "value": "three"}"#) == "audience.filter.value must be a number")
        #expect(reason(#"{"param": "since", "op": "in the last", "value": "a while"}"#)?.hasPrefix("audience.filter.value must be a period") == true)
        #expect(reason(#"{"param": "since", "op": "=", "value": "2026-02-30"}"#) == "audience.filter.value must be a date (YYYY-MM-DD)")
        #expect(
            reason(#"{"param": "age", "op": "between", "values": [30, 18]}"#)
                == "audience.filter.values: the first value of between must not be above the second")
        #expect(
            reason(#"{"device": "app", "op": "=", "value": "other-key"}"#) == "audience.filter.value: 'other-key' is not the integration key of a targeted app")
        #expect(reason(#"{"param": "age", "device": "platform", "op": "exists"}"#) == "audience.filter needs exactly one of param and device")
        #expect(reason(#"{"any": []}"#) == "audience.filter.any is empty")
        #expect(
            reason(#"{"param": "age", "op": "=", "value": 3, "type": "string"}"#)
                == "audience.filter.type is string but the targeted apps declare 'age' as integer")
        let nested = (0..<6).reduce(#"{"param": "age", "op": "exists"}"#) { inner, _ in #"{"not": \#(inner)}"# }
        #expect(reason(nested) == "audience.filter.not.not.not.not.not: groups nest at most 5 deep")
        let many = "{\"all\": [" + Array(repeating: #"{"param": "age", "op": "exists"}"#, count: 51).joined(separator: ",") + "]}"
        #expect(reason(many) == "audience.filter.all[50]: a filter has at most 50 conditions")
        #expect(reason(#"{"all": [{"param": "age", "op": "exists"}], "any": []}"#)?.contains("invalid value at audience.filter") == true)
    }

    @Test("a parameter two targeted apps declare with different types is refused unless one app is targeted")
    func conflictingTypes() {
        let apps = [
            PlanningApp(
                appId: UUID(), integrationKey: "a", platform: .ios, environment: "production", bundleId: "b", fcmProjectId: nil, variables: [],
                credential: nil, parameterTypes: ["level": "integer"]),
            PlanningApp(
                appId: UUID(), integrationKey: "b", platform: .ios, environment: "production", bundleId: "b", fcmProjectId: nil, variables: [],
                credential: nil, parameterTypes: ["level": "string"]),
        ]
        let condition = AudienceFilter.condition(AudienceCondition(param: "level", op: "=", value: "3"))
        #expect(throws: AudienceFilterRules.Failure.self) { try AudienceFilterRules.checked(condition, apps: apps) }
        #expect(
            (try? AudienceFilterRules.checked(condition, apps: [apps[0]]))
                == .condition(AudienceCondition(param: "level", op: "=", value: "3", type: "integer")))
    }

    @Test("no name or value of the request is spliced into the SQL text")
    func valuesAreBound() throws {
        let hostile = "x'); DROP TABLE push.subscriptions; --"
        let delivery = try accepted(
            #"{"any": [{"param": "\#(hostile)", "op": "=", "value": "\#(hostile)"}, {"param": "tier", "op": "in", "values": ["\#(hostile)", "b"]}]}"#)
        let sql = AudienceFilterSQL(delivery.audience.filter, reference: Self.now)
        #expect(!sql.condition.contains("DROP"))
        #expect(sql.values == [hostile, hostile, "tier", hostile, "b"])
        #expect(sql.condition.contains("f.v[4:5]"), "a list is one slice of the bound array")
        #expect(AudienceFilterSQL(nil, reference: Self.now).condition == "true")
    }
}
