import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOSSL

/// Where the admin API is and how to authenticate. The catalog (services, apps, credentials,
/// devices) is served by the registration service: `PUSH_ADMIN_URL` (default
/// `http://127.0.0.1:8080`); deliveries by the delivery-planning service:
/// `PUSH_PLANNING_ADMIN_URL` (default `http://127.0.0.1:8082`). Both take `PUSH_ADMIN_TOKEN` (or
/// `--token-file`). Behind the compose file's TLS proxy, whose certificate comes from its own CA,
/// `PUSH_ADMIN_CA_FILE` (or `--ca-file`) names that CA's certificate, trusted besides the system's.
struct AdminConnection: ParsableArguments {
    /// The service a command talks to.
    enum Server {
        case registration, planning

        var defaultURL: (variable: String, url: String) {
            switch self {
            case .registration: ("PUSH_ADMIN_URL", "http://127.0.0.1:8080")
            case .planning: ("PUSH_PLANNING_ADMIN_URL", "http://127.0.0.1:8082")
            }
        }
    }

    @Option(
        help:
            "Base URL of the service answering the command (default: PUSH_ADMIN_URL or http://127.0.0.1:8080; deliveries: PUSH_PLANNING_ADMIN_URL or http://127.0.0.1:8082)."
    )
    var url: String?

    @Option(help: "File holding the admin bearer token (default: PUSH_ADMIN_TOKEN).")
    var tokenFile: String?

    @Option(help: "PEM file of a CA to trust besides the system's, for an HTTPS admin URL (default: PUSH_ADMIN_CA_FILE).")
    var caFile: String?

    /// Sends a JSON request and returns the response body; a non-2xx answer becomes an error
    /// naming the status and the API's reason (every problem, when the API lists them).
    func call(_ method: String, _ path: String, body: (any Encodable)? = nil, rawBody: Data? = nil, on server: Server = .registration) async throws
        -> Data
    {
        let environment = ProcessInfo.processInfo.environment
        let base = url ?? environment[server.defaultURL.variable] ?? server.defaultURL.url
        guard let endpoint = URL(string: base + "/admin/v1" + path) else { throw ValidationError("invalid admin URL \(base)") }
        let token: String
        if let tokenFile {
            guard let contents = FileManager.default.contents(atPath: tokenFile) else { throw ValidationError("cannot read \(tokenFile)") }
            token = String(decoding: contents, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        } else if let value = environment["PUSH_ADMIN_TOKEN"], !value.isEmpty {
            token = value
        } else {
            throw ValidationError("set PUSH_ADMIN_TOKEN or pass --token-file")
        }
        var request = HTTPClientRequest(url: endpoint.absoluteString)
        request.method = .init(rawValue: method)
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        if let document = try body.map({ try JSONEncoder().encode($0) }) ?? rawBody {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: document))
        }
        let (status, data) = try await Self.withClient(caFile: caFile ?? environment["PUSH_ADMIN_CA_FILE"]) { client in
            let response = try await client.execute(request, timeout: .seconds(30))
            return (Int(response.status.code), Data(buffer: try await response.body.collect(upTo: 256 * 1024 * 1024)))
        }
        guard (200..<300).contains(status) else {
            struct Refusal: Decodable {
                var error: String
                var problems: [String]?
            }
            let refusal = try? JSONDecoder().decode(Refusal.self, from: data)
            let reason =
                refusal.map { refusal in
                    guard let problems = refusal.problems, problems.count > 1 else { return refusal.error }
                    return "\(problems.count) problems:\n" + problems.map { "  - \($0)" }.joined(separator: "\n")
                } ?? String(decoding: data, as: UTF8.self)
            throw AdminCallError(status: status, reason: reason)
        }
        return data
    }

    /// The shared HTTP client, or one trusting `caFile` too (shut down after `body`).
    static func withClient<T>(caFile: String?, _ body: (HTTPClient) async throws -> T) async throws -> T {
        guard let caFile else { return try await body(HTTPClient.shared) }
        guard FileManager.default.isReadableFile(atPath: caFile) else { throw ValidationError("cannot read the CA file \(caFile)") }
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = [.file(caFile)]
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: HTTPClient.Configuration(tlsConfiguration: tls))
        do {
            let result = try await body(client)
            try await client.shutdown()
            return result
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    /// Prints a JSON answer indented.
    static func printJSON(_ data: Data) throws {
        guard !data.isEmpty else { return }
        let object = try JSONSerialization.jsonObject(with: data)
        let pretty = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
        print(String(decoding: pretty, as: UTF8.self))
    }
}

struct AdminCallError: Error, CustomStringConvertible {
    var status: Int
    var reason: String
    var description: String { "admin API answered \(status): \(reason)" }
}

struct Services: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Manage services (groups of mobile apps) through the admin API.",
        subcommands: [List.self, Create.self, Update.self, Delete.self, FrequencyCap.self]
    )

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List services.")
        @OptionGroup var connection: AdminConnection
        func run() async throws { try AdminConnection.printJSON(try await connection.call("GET", "/services")) }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a service.")
        @OptionGroup var connection: AdminConnection
        @Option(help: "Internal name (letters, digits, '_', '.', '-').") var name: String
        @Option(help: "Display label.") var label: String
        func run() async throws {
            try AdminConnection.printJSON(try await connection.call("POST", "/services", body: ["name": name, "label": label]))
        }
    }

    struct Update: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Change a service's label.")
        @OptionGroup var connection: AdminConnection
        @Option(help: "Internal name.") var name: String
        @Option(help: "New display label.") var label: String
        func run() async throws {
            try AdminConnection.printJSON(try await connection.call("PUT", "/services/\(name)", body: ["label": label]))
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete a service that has no apps.")
        @OptionGroup var connection: AdminConnection
        @Option(help: "Internal name.") var name: String
        func run() async throws {
            _ = try await connection.call("DELETE", "/services/\(name)")
            print("deleted service \(name)")
        }
    }

    struct FrequencyCap: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "frequency-cap",
            abstract: "Show, set (--messages N --period-hours H) or lift (--lift) a service's frequency cap.",
            discussion:
                "At most N bulk deliveries of the service per person (user key, or device without one) in any H hours; transactional deliveries and proofs are never capped (docs/delivery-requests.md, \"Frequency cap\")."
        )
        @OptionGroup var connection: AdminConnection
        @Option(help: "Internal name.") var name: String
        @Option(help: "Bulk deliveries per person in the period (1-1000).") var messages: Int?
        @Option(help: "The rolling period in hours (1-720).") var periodHours: Int?
        @Flag(help: "Lift the cap.") var lift = false

        func validate() throws {
            if lift, messages != nil || periodHours != nil { throw ValidationError("--lift takes neither --messages nor --period-hours") }
            if (messages == nil) != (periodHours == nil) { throw ValidationError("--messages and --period-hours go together") }
        }

        func run() async throws {
            let path = "/services/\(Deliveries.Request.escaped(name))/frequency-cap"
            if lift {
                _ = try await connection.call("DELETE", path)
                print("lifted the frequency cap of service \(name)")
            } else if let messages, let periodHours {
                try AdminConnection.printJSON(try await connection.call("PUT", path, body: ["messages": messages, "periodHours": periodHours]))
            } else {
                try AdminConnection.printJSON(try await connection.call("GET", path))
            }
        }
    }
}

struct Apps: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Manage iOS and Android apps through the admin API.",
        subcommands: [List.self, Show.self, Create.self, Delete.self, Credentials.self]
    )

    struct Credentials: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Set an app's provider credentials (read from files, never from the command line), or list them.",
            discussion:
                "APNs token: --p8 FILE --key-id ID --team-id ID. APNs certificate: --p12 FILE --password-file FILE, or --certificate-pem FILE --private-key-pem FILE. FCM: --service-account FILE. Without any, lists the stored credentials."
        )
        @OptionGroup var connection: AdminConnection
        @Option(help: "App id.") var id: String
        @Option(help: "APNs .p8 key file.") var p8: String?
        @Option(help: "APNs key id (10 characters).") var keyId: String?
        @Option(help: "Apple team id (10 characters).") var teamId: String?
        @Option(help: "APNs .p12 certificate file.") var p12: String?
        @Option(help: "File holding the .p12 password.") var passwordFile: String?
        @Option(help: "APNs certificate PEM file.") var certificatePem: String?
        @Option(help: "APNs certificate private key PEM file.") var privateKeyPem: String?
        @Option(help: "FCM service-account JSON file.") var serviceAccount: String?

        func read(_ path: String) throws -> Data {
            guard let data = FileManager.default.contents(atPath: path) else { throw ValidationError("cannot read \(path)") }
            return data
        }

        func text(_ path: String) throws -> String { String(decoding: try read(path), as: UTF8.self) }

        func run() async throws {
            var body: [String: String] = [:]
            if let p8 {
                body = ["kind": "apns-token", "privateKey": try text(p8), "keyId": keyId ?? "", "teamId": teamId ?? ""]
            } else if let p12 {
                body = [
                    "kind": "apns-certificate", "pkcs12": try read(p12).base64EncodedString(),
                    "password": try passwordFile.map { try text($0).trimmingCharacters(in: .newlines) } ?? "",
                ]
            } else if let certificatePem, let privateKeyPem {
                body = ["kind": "apns-certificate", "certificatePem": try text(certificatePem), "privateKeyPem": try text(privateKeyPem)]
            } else if let serviceAccount {
                body = ["kind": "fcm-service-account", "serviceAccount": try text(serviceAccount)]
            } else {
                try AdminConnection.printJSON(try await connection.call("GET", "/apps/\(id)/credentials"))
                return
            }
            try AdminConnection.printJSON(try await connection.call("PUT", "/apps/\(id)/credentials", body: body))
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List apps, all or of one service.")
        @OptionGroup var connection: AdminConnection
        @Option(help: "Only this service's apps.") var service: String?
        func run() async throws {
            try AdminConnection.printJSON(try await connection.call("GET", service.map { "/services/\($0)/apps" } ?? "/apps"))
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show one app.")
        @OptionGroup var connection: AdminConnection
        @Option(help: "App id.") var id: String
        func run() async throws { try AdminConnection.printJSON(try await connection.call("GET", "/apps/\(id)")) }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create an app in a service; prints it with its integration key.")
        @OptionGroup var connection: AdminConnection
        @Option(help: "Service internal name.") var service: String
        @Option(help: "ios or android.") var platform: String
        @Option(help: "Display label.") var label: String
        @Option(help: "Integration key (generated when omitted).") var integrationKey: String?
        @Option(help: "iOS: sandbox or production (default production).") var environment: String?
        @Option(help: "iOS bundle id (the APNs topic).") var bundleId: String?
        @Option(help: "Android FCM project id.") var fcmProjectId: String?
        @Option(name: .customLong("variable"), help: "An application variable (repeatable).") var variables: [String] = []
        @Option(name: .customLong("sound"), help: "An iOS sound as name:label (repeatable).") var sounds: [String] = []
        @Option(name: .customLong("param"), help: "A kept subscription parameter as name:type (repeatable).") var params: [String] = []

        struct Body: Encodable {
            var platform: String
            var label: String
            var integrationKey: String?
            var environment: String?
            var bundleId: String?
            var fcmProjectId: String?
            var variables: [String]
            var sounds: [[String: String]]
            var subscriptionParameters: [[String: String]]
        }

        func run() async throws {
            func pairs(_ values: [String], _ first: String, _ second: String) throws -> [[String: String]] {
                try values.map { value in
                    let parts = value.split(separator: ":", maxSplits: 1).map(String.init)
                    guard parts.count == 2 else { throw ValidationError("expected \(first):\(second), got \(value)") }
                    return [first: parts[0], second: parts[1]]
                }
            }
            let body = Body(
                platform: platform, label: label, integrationKey: integrationKey, environment: environment,
                bundleId: bundleId, fcmProjectId: fcmProjectId, variables: variables,
                sounds: try pairs(sounds, "name", "label"), subscriptionParameters: try pairs(params, "name", "type")
            )
            try AdminConnection.printJSON(try await connection.call("POST", "/services/\(service)/apps", body: body))
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete an app.")
        @OptionGroup var connection: AdminConnection
        @Option(help: "App id.") var id: String
        func run() async throws {
            _ = try await connection.call("DELETE", "/apps/\(id)")
            print("deleted app \(id)")
        }
    }
}
