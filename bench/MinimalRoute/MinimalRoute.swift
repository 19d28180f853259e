import Hummingbird
import Logging

/// The baseline of bench/registration.sh: a Hummingbird route that reads a form body and
/// answers 200, with nothing behind it. The registration service's rate is compared to this.
@main
enum MinimalRoute {
    static func main() async throws {
        let port = Int(CommandLine.arguments.dropFirst().first ?? "") ?? 18_182
        var logger = Logger(label: "minimal-route")
        logger.logLevel = .warning
        let router = Router()
        router.post("/nms/mobile/1/registerIOS.jssp") { request, _ -> String in
            let body = try await request.body.collect(upTo: 16_384)
            return body.readableBytes > 0 ? "OK\n" : "EMPTY\n"
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)), logger: logger)
        try await app.runService()
    }
}
