import Hummingbird
import Logging

/// The baseline of bench/registration.sh and bench/tracking.sh: Hummingbird routes that read a
/// form body or a query and answer 200, with nothing behind them. The services' rates are
/// compared to these.
@main
enum MinimalRouteServer {
    static func main() async throws {
        let port = Int(CommandLine.arguments.dropFirst().first ?? "") ?? 18_182
        var logger = Logger(label: "minimal-route")
        logger.logLevel = .warning
        let router = Router()
        router.post("/nms/mobile/1/registerIOS.jssp") { request, _ -> String in
            let body = try await request.body.collect(upTo: 16_384)
            return body.readableBytes > 0 ? "OK\n" : "EMPTY\n"
        }
        // The baseline of bench/tracking.sh: a GET that reads its query and answers 200.
        router.get("/r/") { request, _ -> String in
            (request.uri.query?.isEmpty ?? true) ? "EMPTY\n" : "OK\n"
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)), logger: logger)
        try await app.runService()
    }
}
