import Foundation
import PushConsole
import Testing

@Suite("The console's catalog forms: app fields, credential uploads, multipart bodies")
struct ConsoleCatalogFormTests {
    @Test("the app form becomes the admin API's app object: lists one per line, sounds and parameters as name: value")
    func appBody() throws {
        let form = ConsoleAppForm(fields: [
            "platform": "ios", "label": " Trips ", "environment": "sandbox", "bundleId": "com.trips", "fcmProjectId": "ignored",
            "variables": "url\r\n\n mediaUrl ", "sounds": "chime: Chime\nbell:Bell", "subscriptionParameters": "email: string\npoints: integer",
        ])
        let body = try form.body()
        #expect(body["platform"] as? String == "ios")
        #expect(body["label"] as? String == "Trips")
        #expect(body["environment"] as? String == "sandbox")
        #expect(body["bundleId"] as? String == "com.trips")
        #expect(body["fcmProjectId"] == nil)
        #expect(body["integrationKey"] == nil, "empty: the admin API generates or keeps it")
        #expect(body["variables"] as? [String] == ["url", "mediaUrl"])
        #expect(body["sounds"] as? [[String: String]] == [["name": "chime", "label": "Chime"], ["name": "bell", "label": "Bell"]])
        #expect(body["subscriptionParameters"] as? [[String: String]] == [["name": "email", "type": "string"], ["name": "points", "type": "integer"]])

        let android = try ConsoleAppForm(fields: ["platform": "android", "label": "A", "environment": "sandbox", "fcmProjectId": "p"]).body()
        #expect(android["environment"] as? String == "production")
        #expect(android["fcmProjectId"] as? String == "p")
        #expect(android["bundleId"] == nil)
    }

    @Test("a list line without its colon is named, line by line")
    func pairProblems() {
        #expect(throws: ConsoleFormProblem("sounds, line 2: write name: label")) {
            try ConsoleAppForm(fields: ["label": "x", "sounds": "a: A\nbell"]).body()
        }
        #expect(throws: ConsoleFormProblem("subscription parameters, line 1: write name: type (string, integer, decimal, boolean or date)")) {
            try ConsoleAppForm(fields: ["label": "x", "subscriptionParameters": "email:"]).body()
        }
    }

    @Test("an app as the admin API shows it fills the edit form, and comes back unchanged")
    func roundTrip() throws {
        let app: [String: Any] = [
            "platform": "ios", "label": "T", "environment": "production", "bundleId": "b", "integrationKey": "k", "variables": ["url"],
            "sounds": [["name": "chime", "label": "Chime"]], "subscriptionParameters": [["name": "email", "type": "string"]],
        ]
        let form = ConsoleAppForm(app: app)
        #expect(form.sounds == "chime: Chime")
        #expect(form.subscriptionParameters == "email: string")
        #expect(
            ConsoleAppForm(fields: [
                "platform": form.platform, "label": form.label, "environment": form.environment, "bundleId": form.bundleId,
                "integrationKey": form.integrationKey, "variables": form.variables, "sounds": form.sounds,
                "subscriptionParameters": form.subscriptionParameters,
            ]) == form)
    }

    @Test("credential uploads: the kind's fields, and a wrong file named without its content")
    func credentials() throws {
        let pem = "-----BEGIN PRIVATE KEY-----\nSECRETSECRET\n-----END PRIVATE KEY-----\n"
        let p8 = ConsoleMultipart.File(filename: "AuthKey_ABC.p8", data: Data(pem.utf8))
        let body = try ConsoleCredentialForm.body(fields: ["kind": "apns-token", "keyId": "ABC", "teamId": "TEAM"], file: p8)
        #expect(body["privateKey"] as? String == pem)
        #expect(body["keyId"] as? String == "ABC")

        let json = ConsoleMultipart.File(filename: "account.json", data: Data(#"{"type": "service_account", "private_key": "SECRETSECRET"}"#.utf8))
        do {
            _ = try ConsoleCredentialForm.body(fields: ["kind": "apns-token", "keyId": "A", "teamId": "T"], file: json)
            Issue.record("a JSON file taken as a .p8 key")
        } catch {
            #expect(error.text.contains("the file “account.json” is not a .p8 key"))
            #expect(!error.text.contains("SECRET"))
        }
        do {
            _ = try ConsoleCredentialForm.body(fields: ["kind": "fcm-service-account"], file: p8)
            Issue.record("a .p8 key taken as a service account")
        } catch {
            #expect(error.text.contains("the file “AuthKey_ABC.p8” is not a service-account JSON file"))
            #expect(!error.text.contains("SECRET"))
        }
        #expect(try ConsoleCredentialForm.body(fields: ["kind": "fcm-service-account"], file: json)["serviceAccount"] as? String != nil)
        #expect(throws: ConsoleFormProblem("choose the file: the .p8 key")) { try ConsoleCredentialForm.body(fields: ["kind": "apns-token"], file: nil) }
        #expect(throws: ConsoleFormProblem("the key id is missing: the 10 characters Apple shows next to the key")) {
            try ConsoleCredentialForm.body(fields: ["kind": "apns-token", "teamId": "T"], file: p8)
        }
        let p12 = ConsoleMultipart.File(filename: "cert.p12", data: Data([0x30, 0x82, 0x01, 0xff]))
        let certificate = try ConsoleCredentialForm.body(fields: ["kind": "apns-certificate", "password": "pw"], file: p12)
        #expect(certificate["pkcs12"] as? String == Data([0x30, 0x82, 0x01, 0xff]).base64EncodedString())
    }

    @Test("a multipart body as Chromium posts it: text fields and files, binary kept; a malformed one is nil")
    func multipart() throws {
        #expect(ConsoleMultipart.boundary(contentType: "multipart/form-data; boundary=----WebKitFormBoundaryX1") == "----WebKitFormBoundaryX1")
        #expect(ConsoleMultipart.boundary(contentType: "application/x-www-form-urlencoded") == nil)
        let boundary = "----WebKitFormBoundaryX1"
        var body = Data()
        body.append(Data("------WebKitFormBoundaryX1\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\nabc\r\n".utf8))
        body.append(
            Data(
                "------WebKitFormBoundaryX1\r\nContent-Disposition: form-data; name=\"file\"; filename=\"k.p12\"\r\nContent-Type: application/octet-stream\r\n\r\n"
                    .utf8))
        body.append(Data([0x00, 0x0d, 0x0a, 0xff]))
        body.append(Data("\r\n------WebKitFormBoundaryX1\r\nContent-Disposition: form-data; name=\"empty\"; filename=\"\"\r\n\r\n\r\n".utf8))
        body.append(Data("------WebKitFormBoundaryX1--\r\n".utf8))
        let parsed = try #require(ConsoleMultipart.parse(body, boundary: boundary))
        #expect(parsed.fields == ["csrf": "abc"])
        #expect(parsed.files["file"] == ConsoleMultipart.File(filename: "k.p12", data: Data([0x00, 0x0d, 0x0a, 0xff])))
        #expect(parsed.files["empty"] == nil, "no file chosen")
        #expect(ConsoleMultipart.parse(Data("garbage".utf8), boundary: boundary) == nil)
        #expect(ConsoleMultipart.parse(Data("------WebKitFormBoundaryX1\r\nno end".utf8), boundary: boundary) == nil)
    }
}
