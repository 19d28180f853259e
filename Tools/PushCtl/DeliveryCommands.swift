import ArgumentParser
import Foundation

/// `pushctl deliveries`: the deliveries' part of the admin API (served by the delivery-planning
/// service, docs/admin-api.md).
struct Deliveries: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Submit, preview and follow deliveries through the admin API (delivery-planning service).",
        subcommands: [Submit.self, Preview.self, List.self, Show.self, Request.self, Cancel.self, Pause.self, Resume.self]
    )

    /// A request document from a file, or from standard input with `-`.
    static func document(_ path: String) throws -> Data {
        if path == "-" { return FileHandle.standardInput.readDataToEndOfFile() }
        guard let data = FileManager.default.contents(atPath: path) else { throw ValidationError("cannot read \(path)") }
        return data
    }

    struct Submit: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Submit a delivery request (contract version 1, docs/delivery-requests.md).",
            discussion:
                "The request is checked at once (every problem is named), published on push.delivery-requests and answered with its delivery id. Submitting the same requestId again is still one delivery."
        )
        @OptionGroup var connection: AdminConnection
        @Option(help: "The request's JSON file ('-' for standard input).") var file: String
        @Flag(help: "Wait until the planner accepted the request (at most 60 s).") var wait = false

        func run() async throws {
            let answer = try await connection.call("POST", "/deliveries", rawBody: try Deliveries.document(file), on: .planning)
            try AdminConnection.printJSON(answer)
            guard wait else { return }
            struct Submitted: Decodable { var requestId: String }
            let requestId = try JSONDecoder().decode(Submitted.self, from: answer).requestId
            let deadline = Date().addingTimeInterval(60)
            while Date() < deadline {
                struct State: Decodable { var state: String }
                let state = try await connection.call("GET", "/delivery-requests/\(Request.escaped(requestId))", on: .planning)
                if try JSONDecoder().decode(State.self, from: state).state != "submitted" {
                    try AdminConnection.printJSON(state)
                    return
                }
                try await Task.sleep(for: .milliseconds(250))
            }
            throw ValidationError("request \(requestId) not read by the planner within 60 s (is delivery-planning running?)")
        }
    }

    struct Preview: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Preview a delivery request: audience counts, exclusions and sample payloads; nothing is sent.")
        @OptionGroup var connection: AdminConnection
        @Option(help: "The request's JSON file ('-' for standard input).") var file: String
        @Option(help: "Sample devices per app (0 to 20).") var samples = 3

        func run() async throws {
            try AdminConnection.printJSON(
                try await connection.call("POST", "/deliveries/preview?samples=\(samples)", rawBody: try Deliveries.document(file), on: .planning))
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List deliveries, most recent first, with their indicators.")
        @OptionGroup var connection: AdminConnection
        @Option(help: "Only this service's deliveries.") var service: String?
        @Option(help: "Only deliveries in this status (accepted, planning, planned).") var status: String?
        @Option(help: "At most this many (1 to 500).") var limit = 50
        @Flag(help: "Include proofs (left out by default).") var proofs = false

        func run() async throws {
            var query = ["limit=\(limit)"]
            if proofs { query.append("proofs=true") }
            if let service { query.append("service=\(Request.escaped(service))") }
            if let status { query.append("status=\(Request.escaped(status))") }
            try AdminConnection.printJSON(try await connection.call("GET", "/deliveries?" + query.joined(separator: "&"), on: .planning))
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show a delivery: status, indicators, content and failures by reason.")
        @OptionGroup var connection: AdminConnection
        @Option(help: "Delivery id (the _dId).") var id: String

        func run() async throws {
            try AdminConnection.printJSON(try await connection.call("GET", "/deliveries/\(Request.escaped(id))", on: .planning))
        }
    }

    struct Request: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "What became of a requestId: submitted, accepted (its delivery) or rejected (why).")
        @OptionGroup var connection: AdminConnection
        @Option(help: "The request's requestId.") var requestId: String

        func run() async throws {
            try AdminConnection.printJSON(try await connection.call("GET", "/delivery-requests/\(Self.escaped(requestId))", on: .planning))
        }

        /// A path segment or query value, percent-encoded.
        static func escaped(_ text: String) -> String {
            text.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? text
        }
    }
}

extension Deliveries {
    /// `pushctl deliveries cancel|pause|resume --id`.
    struct ControlCommand {
        static func run(_ connection: AdminConnection, _ action: String, _ id: String) async throws {
            try AdminConnection.printJSON(try await connection.call("POST", "/deliveries/\(Request.escaped(id))/\(action)", on: .planning))
        }
    }

    struct Cancel: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Cancel a delivery for good: nothing more is planned or sent; its messages not yet sent end cancelled.")
        @OptionGroup var connection: AdminConnection
        @Option(help: "Delivery id.") var id: String
        func run() async throws { try await ControlCommand.run(connection, "cancel", id) }
    }

    struct Pause: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Hold a delivery: planning and sending wait until it is resumed.")
        @OptionGroup var connection: AdminConnection
        @Option(help: "Delivery id.") var id: String
        func run() async throws { try await ControlCommand.run(connection, "pause", id) }
    }

    struct Resume: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Let a paused delivery go on where it stopped.")
        @OptionGroup var connection: AdminConnection
        @Option(help: "Delivery id.") var id: String
        func run() async throws { try await ControlCommand.run(connection, "resume", id) }
    }
}

/// `pushctl devices`: look a person's or a token's devices up, lift a quarantine, unsubscribe
/// and subscribe again (registration service's admin API).
struct Devices: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Look devices up (subscriptions, quarantine, latest messages), lift a quarantine, unsubscribe or resubscribe through the admin API.",
        subcommands: [Show.self, Lift.self, Unsubscribe.self, Resubscribe.self]
    )

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "A user key's or a token's subscriptions in a service.")
        @OptionGroup var connection: AdminConnection
        @Option(help: "Service internal name.") var service: String
        @Option(help: "The person's user key.") var userKey: String?
        @Option(help: "A registration token.") var token: String?
        @Option(help: "Latest messages per device (0 to 50).") var messages = 10

        func run() async throws {
            var query = ["messages=\(messages)"]
            if let userKey { query.append("userKey=\(Deliveries.Request.escaped(userKey))") }
            if let token { query.append("token=\(Deliveries.Request.escaped(token))") }
            let path = "/services/\(Deliveries.Request.escaped(service))/devices?" + query.joined(separator: "&")
            try AdminConnection.printJSON(try await connection.call("GET", path))
        }
    }

    struct Lift: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Lift a device's quarantine: the next deliveries target it again.")
        @OptionGroup var connection: AdminConnection
        @Option(help: "App id.") var app: String
        @Option(help: "The quarantined registration token.") var token: String

        func run() async throws {
            try AdminConnection.printJSON(try await connection.call("POST", "/apps/\(app)/quarantine/lift", body: ["registrationToken": token]))
        }
    }

    /// The person or device a subscription change names: exactly one of a user key and a token.
    struct Target: ParsableArguments {
        @Option(help: "Service internal name.") var service: String
        @Option(help: "The person's user key: all their subscriptions in the service.") var userKey: String?
        @Option(help: "A registration token: that device's subscriptions in the service.") var token: String?

        func validate() throws {
            guard (userKey == nil) != (token == nil) else { throw ValidationError("give exactly one of --user-key and --token") }
        }

        func call(_ connection: AdminConnection, _ action: String) async throws {
            var body: [String: String] = [:]
            if let userKey { body["userKey"] = userKey }
            if let token { body["registrationToken"] = token }
            try AdminConnection.printJSON(try await connection.call("POST", "/services/\(Deliveries.Request.escaped(service))/\(action)", body: body))
        }
    }

    struct Unsubscribe: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Unsubscribe a user's or a device's subscriptions from a service: excluded from every delivery until resubscribed.")
        @OptionGroup var connection: AdminConnection
        @OptionGroup var target: Target
        func run() async throws { try await target.call(connection, "unsubscribe") }
    }

    struct Resubscribe: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Subscribe again a user's or a device's unsubscribed subscriptions in a service.")
        @OptionGroup var connection: AdminConnection
        @OptionGroup var target: Target
        func run() async throws { try await target.call(connection, "resubscribe") }
    }
}

/// `pushctl templates`: a service's stored message templates (registration service's admin API).
struct Templates: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Define and read a service's versioned message templates through the admin API.",
        subcommands: [List.self, Show.self, Define.self]
    )

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The latest version of each template of a service.")
        @OptionGroup var connection: AdminConnection
        @Option(help: "Service internal name.") var service: String
        func run() async throws {
            try AdminConnection.printJSON(try await connection.call("GET", "/services/\(Deliveries.Request.escaped(service))/templates"))
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "One template, its latest version or --version.")
        @OptionGroup var connection: AdminConnection
        @Option(help: "Service internal name.") var service: String
        @Option(help: "Template name.") var name: String
        @Option(help: "A version (default: the latest).") var version: Int?
        func run() async throws {
            let path =
                "/services/\(Deliveries.Request.escaped(service))/templates/\(Deliveries.Request.escaped(name))" + (version.map { "?version=\($0)" } ?? "")
            try AdminConnection.printJSON(try await connection.call("GET", path))
        }
    }

    struct Define: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Store a new version of a template from a JSON file holding a request's content (title, body, variables, ios, android).")
        @OptionGroup var connection: AdminConnection
        @Option(help: "Service internal name.") var service: String
        @Option(help: "Template name.") var name: String
        @Option(help: "The content's JSON file ('-' for standard input).") var file: String
        func run() async throws {
            let path = "/services/\(Deliveries.Request.escaped(service))/templates/\(Deliveries.Request.escaped(name))"
            try AdminConnection.printJSON(try await connection.call("PUT", path, rawBody: try Deliveries.document(file)))
        }
    }
}

/// `pushctl segments`: a service's named, versioned audiences (registration service's admin API).
struct Segments: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Define and read a service's versioned segments (named audience filters) through the admin API.",
        subcommands: [List.self, Show.self, Define.self]
    )

    static func path(_ service: String, _ name: String? = nil) -> String {
        "/services/\(Deliveries.Request.escaped(service))/segments" + (name.map { "/\(Deliveries.Request.escaped($0))" } ?? "")
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The latest version of each segment of a service.")
        @OptionGroup var connection: AdminConnection
        @Option(help: "Service internal name.") var service: String
        func run() async throws { try AdminConnection.printJSON(try await connection.call("GET", Segments.path(service))) }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "One segment, its latest version or --version.")
        @OptionGroup var connection: AdminConnection
        @Option(help: "Service internal name.") var service: String
        @Option(help: "Segment name.") var name: String
        @Option(help: "A version (default: the latest).") var version: Int?
        func run() async throws {
            try AdminConnection.printJSON(try await connection.call("GET", Segments.path(service, name) + (version.map { "?version=\($0)" } ?? "")))
        }
    }

    struct Define: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Store a new version of a segment from a JSON file: {\"filter\": <an audience.filter>, \"description\": \"...\"}.")
        @OptionGroup var connection: AdminConnection
        @Option(help: "Service internal name.") var service: String
        @Option(help: "Segment name.") var name: String
        @Option(help: "The segment's JSON file ('-' for standard input).") var file: String
        func run() async throws {
            try AdminConnection.printJSON(try await connection.call("PUT", Segments.path(service, name), rawBody: try Deliveries.document(file)))
        }
    }
}

/// `pushctl users erase`: forget a person (or an anonymous device) for good (registration
/// service's admin API; docs/operations.md, "Data protection").
struct Users: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Erase a person's data (data-protection requests) through the admin API.", subcommands: [Erase.self])

    struct Erase: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Erase a person (by user key) or an anonymous device (by token) from a service: subscriptions, data keys and log rows.",
            discussion: "Prints the erasure id and the counts removed; the delivery indicators keep their counts. Final: there is no undo.")
        @OptionGroup var connection: AdminConnection
        @OptionGroup var target: Devices.Target
        func run() async throws { try await target.call(connection, "erase") }
    }
}
