import ArgumentParser
import Foundation

/// `pushctl operators`: named operators of the admin APIs and their personal tokens
/// (docs/admin-api.md, "Operators and roles"), through the registration service's admin API.
struct Operators: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Manage the admin APIs' operators (roles, services) and their personal tokens.",
        subcommands: [List.self, Define.self, SetPassword.self, Issue.self, Revoke.self]
    )

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List operators with their tokens (never a token's secret).")
        @OptionGroup var connection: AdminConnection
        func run() async throws { try AdminConnection.printJSON(try await connection.call("GET", "/operators")) }
    }

    struct Define: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set",
            abstract: "Create or change an operator: its role, the services it may act on (every service without --service), active or not.")
        @OptionGroup var connection: AdminConnection
        @Option(help: "The operator's name (1-64 letters, digits, '_', '.', '-', '@').") var name: String
        @Option(help: "admin, marketer, analyst, support or privacy.") var role: String
        @Option(name: .customLong("service"), help: "A service it may act on (repeat for several; none: every service).") var services: [String] = []
        @Flag(help: "Deactivate it: its tokens are refused from the next request.") var inactive = false

        struct Body: Encodable {
            var role: String
            var services: [String]?
            var active: Bool
        }

        func run() async throws {
            let body = Body(role: role, services: services.isEmpty ? nil : services, active: !inactive)
            try AdminConnection.printJSON(try await connection.call("PUT", "/operators/\(Deliveries.Request.escaped(name))", body: body))
        }
    }

    struct SetPassword: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-password",
            abstract: "Set an operator's console password, read from standard input (one line; never an argument: it would show in ps and the shell's history)."
        )
        @OptionGroup var connection: AdminConnection
        @Option(help: "The operator's name.") var name: String
        func run() async throws {
            guard let line = readLine(strippingNewline: true), !line.isEmpty else {
                throw ValidationError("set-password reads the password from standard input (one line); got nothing")
            }
            _ = try await connection.call("PUT", "/operators/\(Deliveries.Request.escaped(name))/password", body: ["password": line])
            print("password set for operator \(name)")
        }
    }

    struct Issue: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "issue-token",
            abstract: "Issue a personal API token to an operator and print it: it is shown this once, keep it in a secret store.")
        @OptionGroup var connection: AdminConnection
        @Option(help: "The operator's name.") var name: String
        @Option(help: "Days until it expires (1-365).") var expiresInDays: Int = 90
        func run() async throws {
            try AdminConnection.printJSON(
                try await connection.call("POST", "/operators/\(Deliveries.Request.escaped(name))/tokens", body: ["expiresInDays": expiresInDays]))
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "revoke-token", abstract: "Revoke one of an operator's tokens.")
        @OptionGroup var connection: AdminConnection
        @Option(help: "The operator's name.") var name: String
        @Option(help: "The token's id (tokenId).") var tokenId: String
        func run() async throws {
            _ = try await connection.call("DELETE", "/operators/\(Deliveries.Request.escaped(name))/tokens/\(Deliveries.Request.escaped(tokenId))")
            print("revoked token \(tokenId) of operator \(name)")
        }
    }
}
