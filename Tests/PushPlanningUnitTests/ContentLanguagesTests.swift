import Foundation
import PushEvents
import PushTestSupport
import Testing

@testable import PushPlanning

@Suite("Content per language")
struct ContentLanguagesTests {
    let validation = DeliveryRequestValidationTests()
    let payloads = MessageFactoryTests()

    @Test("a device gets its own tag, then its language alone, then another region of its language, then the default")
    func matching() {
        let texts = DeliveryRequest.Texts(body: "x")
        let languages = ContentLanguages(["fr": texts, "pt-BR": texts, "pt-PT": texts, "de-AT": texts, "de-CH": texts, "zh-Hant-TW": texts, "es-419": texts])
        let cases: [(String, String?)] = [
            ("fr", "fr"), ("fr-FR", "fr"), ("fr_CA", "fr"), ("FR-be", "fr"),
            ("pt-BR", "pt-BR"), ("pt_br", "pt-BR"), ("pt-PT", "pt-PT"), ("pt", "pt-BR"), ("pt-AO", "pt-BR"),
            ("de-DE", "de-AT"), ("de-CH", "de-CH"), ("zh-Hant-TW", "zh-Hant-TW"), ("zh-CN", "zh-Hant-TW"), ("es-MX", "es-419"),
            ("en-US", nil), ("", nil), ("  ", nil), ("mocklocale", nil), ("f", nil),
        ]
        for (device, expected) in cases {
            #expect(languages.tag(forDevice: device) == expected, "\(device)")
        }
        #expect(ContentLanguages(nil).tag(forDevice: "fr") == nil)
    }

    @Test("tags: language[-Script][-REGION]")
    func wellFormed() {
        for tag in ["fr", "FR", "fil", "pt-BR", "zh-Hant", "zh-Hant-TW", "es-419", "sr-Latn-RS"] { #expect(ContentLanguages.isWellFormed(tag), "\(tag)") }
        for tag in ["", "f", "fren", "fr_FR", "fr-", "-fr", "fr-FRA", "fr-12", "fr-Latn-FR-x", "fr FR", "fr-FR-FR", "é"] {
            #expect(!ContentLanguages.isWellFormed(tag), "\(tag)")
        }
    }

    @Test("each refusal names the language and what is wrong")
    func refusals() {
        func reason(_ languages: String) -> String? {
            validation.reason(requestJSON(requestId: "r", service: "neotrips", content: #"{"title": "Hi", "body": "Hello", "languages": \#(languages)}"#))
        }
        #expect(reason(#"{"fr": {"title": "Salut", "body": "Bonjour {{userKey}}"}, "pt-BR": {"body": "Olá"}}"#) == nil)
        #expect(reason(#"{}"#)?.contains("content.languages must have 1 to 50 languages (has 0)") == true)
        #expect(reason(#"{"fr_FR": {"body": "x"}}"#)?.contains("content.languages: 'fr_FR' is not a language tag") == true)
        #expect(reason(#"{"fr-ca": {"body": "x"}, "fr-CA": {"body": "y"}}"#)?.contains("'fr-CA' and 'fr-ca' are the same language") == true)
        #expect(reason(#"{"fr": {"title": "Salut"}}"#)?.contains("content.languages.fr.body is required") == true)
        #expect(reason(#"{"fr": {"body": "Bonjour {{nom}}"}}"#)?.contains("content.languages.fr.body: unknown placeholder {{nom}}") == true)
        let long = String(repeating: "a", count: 4097)
        #expect(reason(#"{"de": {"title": "\#(long)", "body": "x"}}"#)?.contains("content.languages.de.title is longer than 4096 bytes") == true)
        let many = (0..<51).map { #""l\#(String(UnicodeScalar(97 + $0 / 26)!))\#(String(UnicodeScalar(97 + $0 % 26)!))": {"body": "x"}"# }
        #expect(reason("{" + many.joined(separator: ",") + "}")?.contains("(has 51)") == true)
    }

    @Test("each device's message carries its language's texts, rendered; a language's texts replace the default ones together")
    func messages() throws {
        let (factory, _) = try payloads.factory(
            .init(
                title: "Your flight", subtitle: "Gate change", body: "Hello {{userKey}}",
                languages: ["fr": .init(title: "Votre vol", body: "Bonjour {{userKey}}"), "de-AT": .init(body: "Servus {{param.city|Wien}}")]))
        func alert(_ language: String) throws -> [String: String] {
            let device = TargetedSubscription(
                appId: payloads.ios.appId, registrationToken: "t-\(language)", userKey: "ana", params: [:], osLanguage: language)
            guard case .apns(let message) = factory.message(for: device, plannedAt: Date()) else { throw CancellationError() }
            let aps = try #require(try payloads.json(message.payload)["aps"] as? [String: Any])
            return try #require(aps["alert"] as? [String: String])
        }
        #expect(try alert("fr-CA") == ["title": "Votre vol", "body": "Bonjour ana"])
        #expect(try alert("de_DE") == ["body": "Servus Wien"])
        #expect(try alert("en-GB") == ["title": "Your flight", "subtitle": "Gate change", "body": "Hello ana"])
        #expect(try alert("") == ["title": "Your flight", "subtitle": "Gate change", "body": "Hello ana"])
        #expect(factory.needsLanguage)
        #expect(factory.needsParams, "a language's text reads a parameter")

        let android = TargetedSubscription(appId: payloads.android.appId, registrationToken: "a", userKey: "bo", params: [:], osLanguage: "fr")
        guard case .fcm(let fcm) = factory.message(for: android, plannedAt: Date()) else {
            Issue.record("not FCM")
            return
        }
        let data = try #require(try payloads.json(fcm.message)["data"] as? [String: Any])
        #expect(data["title"] as? String == "Votre vol")
        #expect(data["_msg"] as? String == "Bonjour bo")
        #expect(data["subtitle"] == nil)
    }
}
