import Foundation

/// The app form of the catalog: what a person types, turned into the admin API's app object
/// (`POST /admin/v1/services/{name}/apps`, `PUT /admin/v1/apps/{id}`; docs/admin-api.md), which
/// checks every name and type itself. Lists are one entry per line: variables by name, sounds as
/// `name: label`, subscription parameters as `name: type`.
package struct ConsoleAppForm: Sendable, Equatable {
    package var platform = "ios"
    package var label = ""
    package var environment = "production"
    package var bundleId = ""
    package var fcmProjectId = ""
    /// Empty: the admin API generates one (create), or keeps the app's (edit).
    package var integrationKey = ""
    package var variables = ""
    package var sounds = ""
    package var subscriptionParameters = ""

    package init() {}

    package init(fields: [String: String]) {
        platform = fields["platform"] == "android" ? "android" : "ios"
        label = (fields["label"] ?? "").trimmingCharacters(in: .whitespaces)
        environment = fields["environment"] == "sandbox" ? "sandbox" : "production"
        bundleId = (fields["bundleId"] ?? "").trimmingCharacters(in: .whitespaces)
        fcmProjectId = (fields["fcmProjectId"] ?? "").trimmingCharacters(in: .whitespaces)
        integrationKey = (fields["integrationKey"] ?? "").trimmingCharacters(in: .whitespaces)
        variables = fields["variables"] ?? ""
        sounds = fields["sounds"] ?? ""
        subscriptionParameters = fields["subscriptionParameters"] ?? ""
    }

    /// The form of an app as the admin API shows it (`GET /admin/v1/apps/{id}`).
    package init(app: [String: Any]) {
        platform = app["platform"] as? String ?? "ios"
        label = app["label"] as? String ?? ""
        environment = app["environment"] as? String ?? "production"
        bundleId = app["bundleId"] as? String ?? ""
        fcmProjectId = app["fcmProjectId"] as? String ?? ""
        integrationKey = app["integrationKey"] as? String ?? ""
        variables = (app["variables"] as? [String] ?? []).joined(separator: "\n")
        sounds = (app["sounds"] as? [[String: Any]] ?? []).map { "\($0["name"] as? String ?? ""): \($0["label"] as? String ?? "")" }.joined(separator: "\n")
        subscriptionParameters = (app["subscriptionParameters"] as? [[String: Any]] ?? []).map {
            "\($0["name"] as? String ?? ""): \($0["type"] as? String ?? "")"
        }.joined(separator: "\n")
    }

    static func lines(_ text: String) -> [String] {
        text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// `name: value` lines; a line without its colon names itself in the problem.
    static func pairs(_ text: String, field: String, second: String) throws(ConsoleFormProblem) -> [(String, String)] {
        try lines(text).enumerated().map { (index, line) throws(ConsoleFormProblem) in
            let parts = line.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                throw ConsoleFormProblem("\(field), line \(index + 1): write name: \(second)")
            }
            return (parts[0], parts[1])
        }
    }

    /// The admin API's app object.
    package func body() throws(ConsoleFormProblem) -> [String: Any] {
        var app: [String: Any] = [
            "platform": platform, "label": label, "environment": platform == "ios" ? environment : "production",
            "variables": Self.lines(variables),
            "sounds": try Self.pairs(sounds, field: "sounds", second: "label").map { ["name": $0.0, "label": $0.1] },
            "subscriptionParameters": try Self.pairs(
                subscriptionParameters, field: "subscription parameters", second: "type (string, integer, decimal, boolean or date)"
            ).map { ["name": $0.0, "type": $0.1] },
        ]
        if platform == "ios" { app["bundleId"] = bundleId } else { app["fcmProjectId"] = fcmProjectId }
        if !integrationKey.isEmpty { app["integrationKey"] = integrationKey }
        return app
    }
}

/// A mistake in a console form, found before anything is sent to an admin API.
package struct ConsoleFormProblem: Error, Sendable, Equatable {
    package var text: String
    package init(_ text: String) { self.text = text }
}

/// The credential upload form: a kind, a file, and the fields the kind needs, turned into the
/// admin API's credential object (`PUT /admin/v1/apps/{id}/credentials`). The file's content
/// never appears in a problem: a problem names the file and what it should have been.
package enum ConsoleCredentialForm {
    package static let kinds = ["apns-token", "apns-certificate", "fcm-service-account"]

    package static func body(fields: [String: String], file: ConsoleMultipart.File?) throws(ConsoleFormProblem) -> [String: Any] {
        let kind = fields["kind"] ?? ""
        guard kinds.contains(kind) else { throw ConsoleFormProblem("choose the kind of credential: apns-token, apns-certificate or fcm-service-account") }
        guard let file, !file.data.isEmpty else {
            throw ConsoleFormProblem(
                "choose the file: "
                    + (kind == "apns-token" ? "the .p8 key" : kind == "apns-certificate" ? "the .p12 certificate" : "the service account's .json file"))
        }
        let name = "the file “\(file.filename.prefix(200))”"
        guard file.data.count <= 64 * 1024 else { throw ConsoleFormProblem("\(name) is \(file.data.count) bytes: a credential file is smaller than 64 KiB") }
        switch kind {
        case "apns-token":
            guard let text = String(data: file.data, encoding: .utf8), text.trimmingCharacters(in: .whitespacesAndNewlines).hasPrefix("-----BEGIN") else {
                throw ConsoleFormProblem("\(name) is not a .p8 key: expected a PEM text file beginning with -----BEGIN PRIVATE KEY-----")
            }
            let keyId = (fields["keyId"] ?? "").trimmingCharacters(in: .whitespaces)
            let teamId = (fields["teamId"] ?? "").trimmingCharacters(in: .whitespaces)
            guard !keyId.isEmpty else { throw ConsoleFormProblem("the key id is missing: the 10 characters Apple shows next to the key") }
            guard !teamId.isEmpty else { throw ConsoleFormProblem("the team id is missing: the 10 characters of the Apple developer team") }
            return ["kind": kind, "keyId": keyId, "teamId": teamId, "privateKey": text]
        case "apns-certificate":
            if let text = String(data: file.data, encoding: .utf8), text.trimmingCharacters(in: .whitespacesAndNewlines).hasPrefix("-----BEGIN") {
                throw ConsoleFormProblem("\(name) is a PEM text file: upload the certificate as a .p12 (PKCS #12) file, with its password")
            }
            return ["kind": kind, "pkcs12": file.data.base64EncodedString(), "password": fields["password"] ?? ""]
        default:
            guard let text = String(data: file.data, encoding: .utf8),
                (try? JSONSerialization.jsonObject(with: file.data)) as? [String: Any] != nil
            else {
                throw ConsoleFormProblem(
                    "\(name) is not a service-account JSON file: download it from the Firebase console (Project settings, Service accounts)")
            }
            return ["kind": kind, "serviceAccount": text]
        }
    }
}

/// `multipart/form-data` bodies (RFC 7578), as a browser posts a form with a file.
package enum ConsoleMultipart {
    package struct File: Sendable, Equatable {
        package var filename: String
        package var data: Data
        package init(filename: String, data: Data) {
            self.filename = filename
            self.data = data
        }
    }

    /// The boundary of a `multipart/form-data; boundary=…` content type.
    package static func boundary(contentType: String) -> String? {
        guard contentType.lowercased().hasPrefix("multipart/form-data") else { return nil }
        for parameter in contentType.split(separator: ";").dropFirst() {
            let parts = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if parts.count == 2, parts[0].lowercased() == "boundary" {
                let value = parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                return value.isEmpty || value.count > 200 ? nil : value
            }
        }
        return nil
    }

    /// The text fields and the files of a body; nil when it is not a well-formed multipart body.
    package static func parse(_ body: Data, boundary: String) -> (fields: [String: String], files: [String: File])? {
        let delimiter = Data("\r\n--\(boundary)".utf8)
        let data = Data("\r\n".utf8) + body
        var fields: [String: String] = [:]
        var files: [String: File] = [:]
        guard var start = data.range(of: delimiter) else { return nil }
        while true {
            var cursor = start.upperBound
            // "--" after a delimiter ends the body.
            if data[cursor...].starts(with: Data("--".utf8)) { return (fields, files) }
            guard data[cursor...].starts(with: Data("\r\n".utf8)) else { return nil }
            cursor += 2
            guard let headerEnd = data.range(of: Data("\r\n\r\n".utf8), in: cursor..<data.endIndex),
                let next = data.range(of: delimiter, in: headerEnd.upperBound..<data.endIndex),
                let headers = String(data: data[cursor..<headerEnd.lowerBound], encoding: .utf8)
            else { return nil }
            let content = data[headerEnd.upperBound..<next.lowerBound]
            var name: String?
            var filename: String?
            for line in headers.components(separatedBy: "\r\n") where line.lowercased().hasPrefix("content-disposition:") {
                name = parameter("name", in: line)
                filename = parameter("filename", in: line)
            }
            if let name {
                if let filename {
                    if !(filename.isEmpty && content.isEmpty) { files[name] = File(filename: filename, data: Data(content)) }
                } else {
                    fields[name] = String(data: content, encoding: .utf8) ?? ""
                }
            }
            start = next
        }
    }

    /// `name="value"` in a Content-Disposition line.
    static func parameter(_ key: String, in line: String) -> String? {
        for part in line.split(separator: ";").dropFirst() {
            let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if pair.count == 2, pair[0].lowercased() == key {
                return pair[1].hasPrefix("\"") && pair[1].hasSuffix("\"") && pair[1].count >= 2 ? String(pair[1].dropFirst().dropLast()) : pair[1]
            }
        }
        return nil
    }
}
