import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1

/// The console's way to change anything: the admin APIs over HTTP, with the admin token as
/// bearer (events stay the source of truth; the console writes no table): the catalog (services,
/// apps, credentials) on the registration service, the deliveries (preview, submit, cancel,
/// pause, resume) on the delivery-planning service. Request bodies are never logged: a
/// credential upload carries a secret.
package struct ConsoleAdminClient: Sendable {
    let deliveriesURL: String
    let registrationURL: String
    let token: String
    let logger: Logger

    package init(deliveriesURL: String, registrationURL: String = "http://127.0.0.1:8080", token: String, logger: Logger) {
        self.deliveriesURL = deliveriesURL.hasSuffix("/") ? String(deliveriesURL.dropLast()) : deliveriesURL
        self.registrationURL = registrationURL.hasSuffix("/") ? String(registrationURL.dropLast()) : registrationURL
        self.token = token
        self.logger = logger
    }

    /// The same client calling as `bearer` (a named operator's session token), so that the admin
    /// APIs check its permissions and the audit trail names it.
    package func acting(as bearer: String?) -> ConsoleAdminClient {
        guard let bearer else { return self }
        return ConsoleAdminClient(deliveriesURL: deliveriesURL, registrationURL: registrationURL, token: bearer, logger: logger)
    }

    /// An admin API's answer: its status and, for a refusal, its `error` sentence.
    package struct Answer: Sendable {
        package var status: Int
        package var error: String?
        /// Each problem of a refusal (the admin API's `problems`, or its `error` alone).
        package var problems: [String] = []
        package var accepted: Bool { (200..<300).contains(status) }
    }

    /// `POST /admin/v1/deliveries/{id}/{cancel|pause|resume}`.
    package func control(_ action: String, deliveryId: String) async -> Answer {
        let escaped = deliveryId.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        return await post("\(deliveriesURL)/admin/v1/deliveries/\(escaped)/\(action)")
    }

    /// `POST /admin/v1/deliveries/preview?samples=1` or `POST /admin/v1/deliveries` with a
    /// delivery request document: the answer and its JSON body.
    package func submit(_ document: Data, previewOnly: Bool) async -> (Answer, [String: Any]) {
        await send(.POST, "\(deliveriesURL)/admin/v1/deliveries\(previewOnly ? "/preview?samples=1" : "")", body: document, api: "deliveries'")
    }

    /// A call to the registration service's catalog admin API (`/admin/v1/...`): `path` starts
    /// after `/admin/v1`, `body` is a JSON object. The answer and its JSON (an object, or a list
    /// under `"items"`).
    package func catalog(_ method: String, _ path: String, body: [String: Any]? = nil) async -> (Answer, [String: Any]) {
        let data = body.flatMap { try? JSONSerialization.data(withJSONObject: $0, options: [.sortedKeys]) }
        return await send(HTTPMethod(rawValue: method), "\(registrationURL)/admin/v1\(path)", body: data, api: "catalog")
    }

    /// A path segment, percent-encoded.
    package static func segment(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }

    func post(_ url: String) async -> Answer {
        await send(.POST, url, body: nil, api: "deliveries'").0
    }

    func send(_ method: HTTPMethod, _ url: String, body document: Data?, api: String) async -> (Answer, [String: Any]) {
        var request = HTTPClientRequest(url: url)
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        if let document {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: document))
        }
        do {
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30), logger: logger)
            let body = try await response.body.collect(upTo: 4 * 1024 * 1024)
            let parsed = try? JSONSerialization.jsonObject(with: Data(buffer: body))
            let json = (parsed as? [String: Any]) ?? (parsed as? [Any]).map { ["items": $0] } ?? [:]
            var error = json["error"] as? String
            if let problems = json["problems"] as? [String], problems.count > 1 { error = problems.joined(separator: "; ") }
            let problems = json["problems"] as? [String] ?? (json["error"] as? String).map { [$0] } ?? []
            return (Answer(status: Int(response.status.code), error: error, problems: problems), json)
        } catch {
            // The URL only: a request body may hold a credential.
            logger.warning("Console: the admin API did not answer", metadata: ["url": "\(url)", "error": "\(error)"])
            let base = api == "catalog" ? registrationURL : deliveriesURL
            return (Answer(status: 502, error: "the \(api) admin API (\(base)) did not answer: \(error)"), [:])
        }
    }
}
