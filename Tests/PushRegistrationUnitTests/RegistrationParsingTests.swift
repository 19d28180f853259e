import PushEvents
import PushRegistration
import PushTestSupport
import PushWire
import Testing

@Suite("Parsing what the Campaign SDKs send")
struct RegistrationParsingTests {
    // The literal requests of the SDKs' own tests (reference/campaign-sdk-protocol.md), shared
    // with the endpoint's integration tests.
    static let iosBody = SDKRegistrationBody.ios
    static let androidBody = SDKRegistrationBody.android

    @Test("the iOS SDK's literal request")
    func iosLiteral() throws {
        let registration = try DeviceRegistration(fields: try FormFields(encoded: Self.iosBody), platform: .ios)
        #expect(registration.integrationKey == "integrationKey")
        #expect(registration.registrationToken == "70757368546f6b656e")
        #expect(registration.userKey == "userkey")
        #expect(registration.deviceName == "My iPhone")
        #expect(registration.deviceBrand == "Apple")
        #expect(registration.osVersion == "iOS 17.0")
        #expect(registration.osLanguage == "en-US")
        #expect(registration.deviceImei == nil)
        #expect(registration.params == ["email": "email@email.com", "userPoints": "3233"])
    }

    @Test("the Android SDK's literal request")
    func androidLiteral() throws {
        let registration = try DeviceRegistration(fields: try FormFields(encoded: Self.androidBody), platform: .android)
        #expect(registration.integrationKey == "testIntegrationKey")
        #expect(registration.registrationToken == "testToken")
        #expect(registration.deviceImei == "12345")
        #expect(registration.osVersion == "mockOSName mockOSVersion")
        #expect(registration.params == ["key": "value"])
    }

    @Test("'+' is a space, an empty userKey is kept empty, uppercase hex tokens are lowered")
    func variants() throws {
        let fields = try FormFields(encoded: "registrationToken=ABCDEF01&mobileAppUuid=k&userKey=&deviceName=My+iPhone&additionalParams=")
        let registration = try DeviceRegistration(fields: fields, platform: .ios)
        #expect(registration.deviceName == "My iPhone")
        #expect(registration.userKey == "")
        #expect(registration.registrationToken == "abcdef01")
        #expect(registration.params.isEmpty)
    }

    @Test("empty pairs are skipped, a name without '=' has an empty value, '=' in a value is kept, the last repeat wins, UTF-8 escapes decode")
    func formEdges() throws {
        let fields = try FormFields(encoded: "&&a=1&&flag&b=x=y&a=2&c=%C3%A9t%C3%A9+%2B&=v&d=")
        #expect(fields.values == ["a": "2", "flag": "", "b": "x=y", "c": "été +", "": "v", "d": ""])
        #expect(try FormFields(encoded: "").values.isEmpty)
        #expect(try FormFields(encoded: "&").values.isEmpty)
        #expect(throws: RegistrationError.self) { try FormFields(encoded: "a=%4") }
        #expect(throws: RegistrationError.self) { try FormFields(encoded: "a=%00") }
    }

    @Test("query-string fields fill in what the body lacks; the body wins")
    func queryString() throws {
        let body = try FormFields(encoded: "registrationToken=aa&userKey=body")
        let query = try FormFields(encoded: "mobileAppUuid=k&userKey=query")
        let merged = body.filling(from: query)
        #expect(merged["mobileAppUuid"] == "k")
        #expect(merged["userKey"] == "body")
    }

    @Test(
        "every additionalParams form the SDKs write",
        arguments: [
            ("<additionalParams></additionalParams>", [String: String]()),
            ("<additionalParams/>", [:]),
            ("<additionalParameters></additionalParameters>", [:]),
            (#"<additionalParams><param name="a" value="1" /></additionalParams>"#, ["a": "1"]),
            (#"<additionalParameters><param name="a" value="1"/></additionalParameters>"#, ["a": "1"]),
            (#"<?xml version="1.0"?><additionalParams><param value='2' name='b'></param></additionalParams>"#, ["b": "2"]),
            (#"<additionalParams><param name="q" value="&amp; &quot; &#x27; &#39; &gt; &lt;" /></additionalParams>"#, ["q": "& \" ' ' > <"]),
            (#"<additionalParams><param name="emoji" value="caf&#233; &#x1F600;" /></additionalParams>"#, ["emoji": "café 😀"]),
            ("", [:]),
        ])
    func additionalParams(xml: String, expected: [String: String]) throws {
        #expect(try AdditionalParams.parse(xml) == expected)
    }

    @Test(
        "malformed XML is a 400 naming the problem",
        arguments: [
            "<params></params>",
            "<additionalParams><param name=\"a\" value=\"1\"></additionalParams>",
            "<additionalParams><param value=\"1\"/></additionalParams>",
            "<additionalParams><param name=a value=1/></additionalParams>",
            "<additionalParams><param name=\"a\" value=\"&bogus;\"/></additionalParams>",
            "<additionalParams></additionalParams>trailing",
            "<additionalParams><other/></additionalParams>",
            "not xml",
        ])
    func malformedXML(xml: String) {
        let error = #expect(throws: RegistrationError.self) { try AdditionalParams.parse(xml) }
        #expect(error?.status == 400)
        #expect(error?.reason.hasPrefix("malformed additionalParams XML") == true)
    }

    @Test(
        "invalid fields are 400s that name the field",
        arguments: [
            ("registrationToken=aa&mobileAppUuid=", Platform.ios, "mobileAppUuid"),
            ("mobileAppUuid=k", .ios, "registrationToken"),
            ("registrationToken=abc&mobileAppUuid=k", .ios, "APNs device token"),
            ("registrationToken=zz&mobileAppUuid=k", .ios, "APNs device token"),
            ("registrationToken=\(String(repeating: "ab", count: 101))&mobileAppUuid=k", .ios, "APNs device token"),
            ("registrationToken=a%01b&mobileAppUuid=k", .android, "FCM registration token"),
            ("registrationToken=tok&mobileAppUuid=k&deviceName=%E0%A4", .android, "deviceName is not valid UTF-8"),
            ("registrationToken=tok&mobileAppUuid=k&deviceName=%zz", .android, "malformed percent-encoding in field deviceName"),
        ])
    func invalidFields(body: String, platform: Platform, fragment: String) {
        let error = #expect(throws: RegistrationError.self) {
            try DeviceRegistration(fields: try FormFields(encoded: body), platform: platform)
        }
        #expect(error?.status == 400)
        #expect(error?.reason.contains(fragment) == true, "\(error?.reason ?? "")")
    }
}

@Suite("The client address behind reverse proxies")
struct ClientAddressTests {
    @Test("the peer unless it is a trusted proxy; then the last X-Forwarded-For hop that is not one")
    func clientAddress() {
        let trusted: Set<String> = ["10.0.0.2", "10.0.0.3"]
        #expect(ClientAddress.resolve(peer: "198.51.100.9", forwardedFor: ["203.0.113.7"], trusted: trusted) == "198.51.100.9")
        #expect(ClientAddress.resolve(peer: "10.0.0.2", forwardedFor: ["203.0.113.7"], trusted: trusted) == "203.0.113.7")
        #expect(ClientAddress.resolve(peer: "10.0.0.2", forwardedFor: ["1.2.3.4, 203.0.113.7, 10.0.0.3"], trusted: trusted) == "203.0.113.7")
        #expect(ClientAddress.resolve(peer: "10.0.0.2", forwardedFor: ["1.2.3.4", "203.0.113.7"], trusted: trusted) == "203.0.113.7")
        #expect(ClientAddress.resolve(peer: "10.0.0.2", forwardedFor: ["10.0.0.3"], trusted: trusted) == "10.0.0.3")
        #expect(ClientAddress.resolve(peer: "10.0.0.2", forwardedFor: [], trusted: trusted) == "10.0.0.2")
    }
}
