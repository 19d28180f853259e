import Hummingbird
import HummingbirdCore
import Logging
import Prometheus

/// A dependency the service needs to do its work; readiness fails while any check fails.
package struct ReadinessCheck: Sendable {
    package var name: String
    package var check: @Sendable () async throws -> Void

    package init(name: String, check: @escaping @Sendable () async throws -> Void) {
        self.name = name
        self.check = check
    }
}

/// The operations endpoints of every service:
/// - `GET /health/live`: 200 while the process runs;
/// - `GET /health/ready`: 200 when every readiness check passes within 2 s, else 503; the JSON
///   body names each check and its error;
/// - `GET /metrics`: Prometheus text format.
package enum OperationsServer {
    package static func build(
        host: String, port: Int, registry: PrometheusCollectorRegistry, checks: [ReadinessCheck], server: HTTPServerBuilder, logger: Logger
    ) -> some ApplicationProtocol {
        let router = Router()
        router.get("/health/live") { _, _ in "ok\n" }
        router.get("/health/ready") { _, _ -> Response in
            let results = await withTaskGroup(of: (String, String?).self) { group in
                for check in checks {
                    group.addTask {
                        do {
                            try await Self.withTimeout(.seconds(2)) { try await check.check() }
                            return (check.name, nil)
                        } catch {
                            return (check.name, String(describing: error))
                        }
                    }
                }
                var results: [(String, String?)] = []
                for await result in group { results.append(result) }
                return results.sorted { $0.0 < $1.0 }
            }
            let ready = results.allSatisfy { $0.1 == nil }
            let body =
                "{\"status\":\"\(ready ? "ready" : "unready")\",\"checks\":{"
                + results.map { "\"\($0.0)\":\(Self.jsonString($0.1 ?? "ok"))" }.joined(separator: ",") + "}}\n"
            return Response(
                status: ready ? .ok : .serviceUnavailable,
                headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: body))
            )
        }
        router.get("/metrics") { _, _ -> Response in
            Response(
                status: .ok,
                headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer()))
            )
        }
        return Application(
            router: router,
            server: server,
            configuration: .init(address: .hostname(host, port: port), serverName: nil),
            logger: logger
        )
    }

    static func withTimeout(_ limit: Duration, _ body: @escaping @Sendable () async throws -> Void) async throws {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await body()
                return true
            }
            group.addTask {
                try await Task.sleep(for: limit)
                return false
            }
            let finished = try await group.next() ?? false
            group.cancelAll()
            if !finished { throw TimedOut() }
        }
    }

    struct TimedOut: Error, CustomStringConvertible {
        var description: String { "no answer within 2 s" }
    }

    static func jsonString(_ text: String) -> String {
        var escaped = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": escaped += "\\\""
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            case _ where scalar.value < 0x20: escaped += String(format: "\\u%04x", scalar.value)
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped + "\""
    }
}
