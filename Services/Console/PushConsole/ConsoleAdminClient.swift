import AsyncHTTPClient
import Foundation
import Logging
import NIOCore

/// The console's way to change anything: the admin APIs over HTTP, with the admin token as
/// bearer (events stay the source of truth; the console writes no table). Today the deliveries'
/// controls (cancel, pause, resume) on the delivery-planning service.
package struct ConsoleAdminClient: Sendable {
    let deliveriesURL: String
    let token: String
    let logger: Logger

    package init(deliveriesURL: String, token: String, logger: Logger) {
        self.deliveriesURL = deliveriesURL.hasSuffix("/") ? String(deliveriesURL.dropLast()) : deliveriesURL
        self.token = token
        self.logger = logger
    }

    /// An admin API's answer: its status and, for a refusal, its `error` sentence.
    package struct Answer: Sendable {
        package var status: Int
        package var error: String?
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
        await post("\(deliveriesURL)/admin/v1/deliveries\(previewOnly ? "/preview?samples=1" : "")", body: document)
    }

    func post(_ url: String) async -> Answer {
        await post(url, body: nil).0
    }

    func post(_ url: String, body document: Data?) async -> (Answer, [String: Any]) {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        if let document {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: document))
        }
        do {
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30), logger: logger)
            let body = try await response.body.collect(upTo: 4 * 1024 * 1024)
            let json = (try? JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any]) ?? [:]
            var error = json["error"] as? String
            if let problems = json["problems"] as? [String], problems.count > 1 { error = problems.joined(separator: "; ") }
            return (Answer(status: Int(response.status.code), error: error), json)
        } catch {
            logger.warning("Console: the admin API did not answer", metadata: ["url": "\(url)", "error": "\(error)"])
            return (Answer(status: 502, error: "the deliveries' admin API (\(deliveriesURL)) did not answer: \(error)"), [:])
        }
    }
}
