import Foundation
import PushEvents
import PushTestSupport
import Testing

@testable import PushPlanning

@Suite("A/B variants")
struct ContentVariantsTests {
    let validation = DeliveryRequestValidationTests()
    let payloads = MessageFactoryTests()

    static let twoVariants: [DeliveryRequest.Variant] = [
        .init(name: "A", share: 30, title: "Your flight", body: "Hello {{userKey}}"),
        .init(name: "B", share: 70, body: "Boarding soon, {{userKey}}", languages: ["fr": .init(body: "Embarquement, {{userKey}}")]),
    ]

    @Test("the split: the shares' on 20,000 devices, the same variant for a device every time, independent between deliveries")
    func split() {
        let variants = ContentVariants(Self.twoVariants)
        var counts = [0, 0]
        var agree = 0
        let app = UUID()
        for device in 0..<20_000 {
            let first = MessageIdentity.messageId(deliveryId: "41", appId: app, registrationToken: "token-\(device)")
            let index = variants.index(forMessage: first)!
            counts[index] += 1
            // A replay computes the same message id, so the same variant.
            #expect(variants.index(forMessage: MessageIdentity.messageId(deliveryId: "41", appId: app, registrationToken: "token-\(device)")) == index)
            let other = MessageIdentity.messageId(deliveryId: "42", appId: app, registrationToken: "token-\(device)")
            if variants.index(forMessage: other) == index { agree += 1 }
        }
        // 30 % of 20,000 is 6,000; the binomial's standard deviation is about 65.
        #expect((5_700...6_300).contains(counts[0]), "\(counts)")
        // Two deliveries agree on a device's variant with probability 0.3² + 0.7² = 0.58.
        #expect((11_200...12_000).contains(agree), "\(agree)")
        #expect(ContentVariants(nil).index(forMessage: UUID()) == nil)
    }

    @Test("points follow the ranges in the request's order; a share of 1 gets exactly 1 % of the line")
    func ranges() {
        let variants = ContentVariants([.init(name: "a", share: 1), .init(name: "b", share: 98), .init(name: "c", share: 1)])
        func id(point: UInt32) -> UUID {
            UUID(uuid: (UInt8(point >> 24), UInt8(point >> 16 & 0xFF), UInt8(point >> 8 & 0xFF), UInt8(point & 0xFF), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
        }
        #expect(variants.index(forMessage: id(point: 0)) == 0)
        #expect(variants.index(forMessage: id(point: 99)) == 0)
        #expect(variants.index(forMessage: id(point: 100)) == 1)
        #expect(variants.index(forMessage: id(point: 9_899)) == 1)
        #expect(variants.index(forMessage: id(point: 9_900)) == 2)
        #expect(variants.index(forMessage: id(point: 19_999)) == 2, "19,999 is 9,999 on the line")
    }

    @Test("the preview's devices per variant: the shares of the targeted devices, in whole devices that add up to them")
    func previewCounts() {
        func counts(_ shares: [Int], _ targeted: Int) -> [Int] {
            DeliveryAdmin.variantCounts(shares.enumerated().map { .init(name: "v\($0.offset)", share: $0.element) }, targeted: targeted).map(\.devices)
        }
        #expect(counts([50, 50], 11) == [6, 5], "the remainder goes to the first among equals")
        #expect(counts([33, 33, 34], 10) == [3, 3, 4])
        #expect(counts([30, 70], 1_000) == [300, 700])
        #expect(counts([1, 99], 0) == [0, 0])
        #expect(counts([20, 20, 20, 20, 20], 3) == [1, 1, 1, 0, 0])
    }

    @Test("names: 1 to 32 letters, digits, _ or -, not starting with _ or -")
    func names() {
        for name in ["A", "b", "control", "v2", "Short_Title-1", String(repeating: "x", count: 32)] {
            #expect(ContentVariants.isWellFormedName(name), "\(name)")
        }
        for name in ["", "-a", "_a", "a b", "é", "a.b", String(repeating: "x", count: 33)] { #expect(!ContentVariants.isWellFormedName(name), "\(name)") }
    }

    @Test("each refusal names the variant's path and what is wrong")
    func refusals() {
        func reason(_ content: String) -> String? {
            validation.reason(requestJSON(requestId: "r", service: "neotrips", content: content))
        }
        let a = #"{"name": "A", "share": 50, "body": "Hello"}"#
        #expect(reason(#"{"variants": [\#(a), {"name": "B", "share": 50, "title": "Hi", "body": "Hey {{userKey}}"}]}"#) == nil)
        #expect(reason(#"{"variants": [\#(a)]}"#)?.contains("content.variants must have 2 to 5 variants (has 1)") == true)
        let six = (0..<6).map { #"{"name": "v\#($0)", "share": \#($0 == 0 ? 50 : 10), "body": "x"}"# }.joined(separator: ",")
        #expect(reason(#"{"variants": [\#(six)]}"#)?.contains("(has 6)") == true)
        #expect(
            reason(#"{"body": "Hello", "variants": [\#(a), {"name": "B", "share": 50, "body": "x"}]}"#)?
                .contains("content.body must be left out with content.variants") == true)
        #expect(
            reason(#"{"languages": {"fr": {"body": "x"}}, "variants": [\#(a), {"name": "B", "share": 50, "body": "x"}]}"#)?
                .contains("content.languages must be left out") == true)
        #expect(reason(#"{"variants": [\#(a), {"name": "B 2", "share": 50, "body": "x"}]}"#)?.contains("content.variants[1].name 'B 2' must be") == true)
        #expect(reason(#"{"variants": [\#(a), {"name": "a", "share": 50, "body": "x"}]}"#)?.contains("content.variants[1].name 'a' is used by another") == true)
        #expect(
            reason(#"{"variants": [\#(a), {"name": "B", "share": 0, "body": "x"}]}"#)?.contains("content.variants[1].share must be a whole per cent") == true)
        #expect(reason(#"{"variants": [\#(a), {"name": "B", "share": 40, "body": "x"}]}"#)?.contains("shares add up to 90, not 100") == true)
        #expect(reason(#"{"variants": [\#(a), {"name": "B", "share": 50.5, "body": "x"}]}"#) != nil)
        #expect(
            reason(#"{"variants": [\#(a), {"name": "B", "share": 50, "title": "Hi"}]}"#)?
                .contains("content.variants[1].body is required when there is a title or subtitle") == true)
        #expect(
            reason(#"{"variants": [\#(a), {"name": "B", "share": 50, "body": "Hi {{nom}}"}]}"#)?
                .contains("content.variants[1].body: unknown placeholder {{nom}}") == true)
        #expect(
            reason(#"{"variants": [\#(a), {"name": "B", "share": 50, "body": "x", "languages": {"fr": {"title": "t"}}}]}"#)?
                .contains("content.variants[1].languages.fr.body is required") == true)
    }

    @Test("each device's message carries its variant's texts (and its variant's language), and names the variant")
    func messages() throws {
        let (factory, _) = try payloads.factory(.init(variants: Self.twoVariants))
        #expect(factory.needsLanguage, "variant B has languages")
        var seen: [String: Int] = [:]
        for device in 0..<200 {
            let language = device % 2 == 0 ? "fr-FR" : "en"
            let subscription = TargetedSubscription(
                appId: payloads.ios.appId, registrationToken: "t\(device)", userKey: "u\(device)", params: [:], osLanguage: language)
            guard case .apns(let message) = factory.message(for: subscription, plannedAt: Date()) else { throw CancellationError() }
            let aps = try #require(try payloads.json(message.payload)["aps"] as? [String: Any])
            let alert = try #require(aps["alert"] as? [String: String])
            let variant = try #require(message.variant)
            #expect(variant == factory.variant(forMessage: message.messageId))
            switch (variant, language) {
            case ("A", _):
                #expect(alert == ["title": "Your flight", "body": "Hello u\(device)"])
                #expect(message.language == nil, "variant A has no languages")
            case ("B", "fr-FR"):
                #expect(alert == ["body": "Embarquement, u\(device)"])
                #expect(message.language == "fr")
            default:
                #expect(alert == ["body": "Boarding soon, u\(device)"])
                #expect(message.language == nil)
            }
            seen[variant, default: 0] += 1
        }
        #expect(seen.keys.sorted() == ["A", "B"])
        let android = TargetedSubscription(appId: payloads.android.appId, registrationToken: "a", userKey: "bo", params: [:])
        guard case .fcm(let fcm) = factory.message(for: android, plannedAt: Date()) else { throw CancellationError() }
        #expect(fcm.variant == factory.variant(forMessage: fcm.messageId))
    }
}
