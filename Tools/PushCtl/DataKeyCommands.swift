import ArgumentParser
import Foundation
import Logging
import NIOCore
import PostgresNIO
import PushCredentials
import PushEvents
import PushStore

/// `pushctl data-keys`: the per-person data keys in `push.subject_keys` and their
/// key-encryption key (`PUSH_DATA_KEYS_KEY`; docs/operations.md, "The data keys' key-encryption key").
struct DataKeys: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "data-keys",
        abstract: "Maintain the data keys' wrapping under the key-encryption key (PUSH_DATA_KEYS_KEY).",
        subcommands: [Wrap.self]
    )

    struct Wrap: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Wrap every data key under the current key-encryption key: those stored as they are, and those wrapped under a previous one (idempotent).",
            discussion:
                "Reads PUSH_DATA_KEYS_KEY (or _FILE) as the current key-encryption key and PUSH_DATA_KEYS_PREVIOUS_KEYS (or _FILE) as the keys rows may still be wrapped under. Prints counts and key ids, never a key. Exits 1 if a row could not be opened (its key id is named). Runbook: docs/operations.md, \"The data keys' key-encryption key\"."
        )

        @Option(help: "Rows per statement.")
        var batchSize: Int = 1_000

        func run() async throws {
            let context = try ToolContext()
            guard let ring = try CredentialCipher.dataKeys(fromEnvironment: ProcessInfo.processInfo.environment) else {
                throw ValidationError("PUSH_DATA_KEYS_KEY (or PUSH_DATA_KEYS_KEY_FILE) is not set: wrap needs the key to wrap under")
            }
            let previous = ring.previous.isEmpty ? "none" : ring.previous.map(\.id).joined(separator: ", ")
            print("current key-encryption key id \(ring.current.id); previous key ids: \(previous)")
            let (logger, batchSize) = (context.logger, max(1, self.batchSize))
            let report = try await context.withPostgres { postgres in
                try await DataKeyWrapper(postgres: postgres, ring: ring, batchSize: batchSize, logger: logger).wrapAll()
            }
            print(
                "data keys: \(report.wrapped) wrapped (stored as they were), \(report.rewrapped) re-wrapped (under a previous key), \(report.current) already under the current key"
            )
            for (reason, count) in report.unreadable.sorted(by: { $0.key < $1.key }) {
                print("data keys: \(count) left as they were: \(reason)")
            }
            if !report.unreadable.isEmpty { throw ExitCode.failure }
        }
    }
}

/// Wraps, in batches, every row of `push.subject_keys` not yet under the ring's current key.
/// Each row is updated only if it still holds what was read (an erasure or another run in
/// between wins), in one statement per batch.
struct DataKeyWrapper {
    let postgres: PostgresClient
    let ring: CredentialCipher
    let batchSize: Int
    let logger: Logger

    struct Report: Sendable {
        var wrapped = 0
        var rewrapped = 0
        var current = 0
        /// Rows that could not be opened, by reason (the key id that wrapped them).
        var unreadable: [String: Int] = [:]
    }

    func wrapAll() async throws -> Report {
        var report = Report()
        let currentId = ring.current.id
        for try await count in try await postgres.query(
            "SELECT count(*)::int FROM push.subject_keys WHERE wrap_key_id = \(currentId)", logger: logger
        ).decode(Int.self) {
            report.current = count
        }
        var after = UUID(uuidString: "00000000-0000-0000-0000-000000000000")!
        while true {
            let rows = try await postgres.query(
                """
                SELECT subject_id, data_key, wrap_key_id FROM push.subject_keys
                WHERE subject_id > \(after) AND wrap_key_id IS DISTINCT FROM \(currentId)
                ORDER BY subject_id LIMIT \(batchSize)
                """,
                logger: logger)
            var ids: [UUID] = []
            var old: [String] = []
            var new: [String] = []
            var seen = 0
            for try await (id, bytes, keyId) in rows.decode((UUID, ByteBuffer, String?).self) {
                seen += 1
                after = id
                let stored = Array(bytes.readableBytesView)
                do {
                    let key = try SubjectKeys.opened(stored, keyId: keyId, subjectId: id, wrapping: ring)
                    let wrapped = try ring.wrap(key, subjectId: id)
                    ids.append(id)
                    old.append(TokenDigest.hex(stored))
                    new.append(TokenDigest.hex(wrapped.bytes))
                    if keyId == nil { report.wrapped += 1 } else { report.rewrapped += 1 }
                } catch {
                    report.unreadable["wrapped under key \(keyId ?? "none"), which is not in PUSH_DATA_KEYS_KEY nor its previous keys", default: 0] += 1
                }
            }
            if !ids.isEmpty {
                try await postgres.query(
                    """
                    UPDATE push.subject_keys k SET data_key = decode(x.new, 'hex'), wrap_key_id = \(currentId)
                    FROM unnest(\(ids)::uuid[], \(old)::text[], \(new)::text[]) AS x(id, old, new)
                    WHERE k.subject_id = x.id AND k.data_key = decode(x.old, 'hex')
                    """,
                    logger: logger)
            }
            if seen < batchSize { return report }
        }
    }
}
