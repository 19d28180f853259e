import ArgumentParser
import Foundation
import PushCredentials

/// `pushctl credentials`: the sealed provider secrets in PostgreSQL (not the admin API's
/// `pushctl apps credentials`, which sets and lists an app's credentials).
struct Credentials: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Maintain the sealed provider credentials in PostgreSQL (key rotation).",
        subcommands: [Reseal.self]
    )

    struct Reseal: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Seal every stored credential and APNs provider token again under the current credentials key (idempotent).",
            discussion:
                "Reads PUSH_CREDENTIALS_KEY (or _FILE) as the current key and PUSH_CREDENTIALS_PREVIOUS_KEYS (or _FILE) as the keys rows may still be sealed under. Prints counts and key ids, never secrets. Exits 1 if a row could not be opened (its key id is named). Runbook: docs/operations.md, \"Rotating the credentials key\"."
        )

        @Option(help: "Rows per transaction.")
        var batchSize: Int = 100

        func run() async throws {
            let context = try ToolContext()
            guard let cipher = try CredentialCipher.fromEnvironment(ProcessInfo.processInfo.environment) else {
                throw ValidationError("PUSH_CREDENTIALS_KEY (or PUSH_CREDENTIALS_KEY_FILE) is not set: reseal needs the key to seal under")
            }
            let previous = cipher.previous.isEmpty ? "none" : cipher.previous.map(\.id).joined(separator: ", ")
            print("current credentials key id \(cipher.current.id); previous key ids: \(previous)")
            let logger = context.logger
            let batchSize = self.batchSize
            let reports = try await context.withPostgres { postgres in
                try await CredentialResealer(postgres: postgres, cipher: cipher, batchSize: batchSize, logger: logger).reseal()
            }
            var unreadable = 0
            for report in reports {
                print("\(report.table): \(report.resealed) resealed, \(report.alreadyCurrent) already under the current key")
                for (reason, count) in report.unreadable.sorted(by: { $0.key < $1.key }) {
                    print("\(report.table): \(count) left as they were: \(reason)")
                    unreadable += count
                }
            }
            if unreadable > 0 {
                print("\(unreadable) rows could not be resealed; the others were")
                throw ExitCode.failure
            }
        }
    }
}
