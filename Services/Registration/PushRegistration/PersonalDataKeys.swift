import Crypto
import Foundation
import Logging
import NIOCore
import PostgresNIO
import PushEvents
import PushStore

/// The per-person data keys of crypto-shredding (docs/architecture.md, "Erasure"): the
/// registration endpoints seal a registration's personal fields under the key of its person
/// (`user:<userKey>` in the app's service) or, without a user key, of its device
/// (`device:<appId>:<tokenDigest>`); the subscription projection opens them; an erasure deletes
/// the key, after which no copy of the topic can be read back. Keys live in `push.subject_keys`
/// (migration 17), never in a cache: a registration right after an erasure must get a new key,
/// whichever registration instance serves it. What is shared is the statement, not the key.
package struct PersonalDataKeys: Sendable {
    let postgres: PostgresClient
    /// The key-encryption key ring (`PUSH_DATA_KEYS_KEY`); nil: keys stored as they are.
    let wrapping: (any DataKeyWrapping)?
    let logger: Logger
    let requests: SubjectKeyRequests
    /// How long a statement may take before its registrations are answered 503 (the store
    /// timeout): a statement caught by a server crash may never be answered (`withStatementDeadline`).
    let statementDeadline: Duration

    package init(
        postgres: PostgresClient, wrapping: (any DataKeyWrapping)?, logger: Logger, maximumStatements: Int = 2, statementDeadline: Duration = .seconds(5)
    ) {
        self.postgres = postgres
        self.wrapping = wrapping
        self.logger = logger
        self.requests = SubjectKeyRequests(maximumStatements: maximumStatements)
        self.statementDeadline = statementDeadline
    }

    /// Lowercase hex SHA-256 of the token's UTF-8 bytes; equal to `push.subscriptions.token_digest`.
    package static func tokenDigest(_ token: String) -> String { TokenDigest.of(token) }

    /// The subject a registration's fields are sealed for.
    package static func subject(userKey: String, appId: UUID, tokenDigest: String) -> String {
        SubjectKeys.subject(userKey: userKey, appId: appId, tokenDigest: tokenDigest)
    }

    /// The subject's key in the service, created on first use. Concurrent registrations share
    /// statements (`SubjectKeyRequests`: one statement creates or reads the keys of every
    /// registration waiting for one, like a group commit), so the database sees a statement per
    /// batch, not per registration; a key is returned only once its row is committed (COMMIT answered).
    package func key(serviceId: UUID, subject: String) async throws -> (id: UUID, key: SymmetricKey) {
        try await requests.key(SubjectKeyRequests.Subject(serviceId: serviceId, subject: subject), keys: self)
    }

    /// One statement: the keys of `subjects`, each created if missing. A subject whose row another
    /// transaction was creating at the same time is absent from the answer (this statement's
    /// snapshot does not see it): the caller asks again.
    func keys(of subjects: [SubjectKeyRequests.Subject]) async throws -> [SubjectKeyRequests.Subject: (id: UUID, key: SymmetricKey)] {
        // Given up past the deadline: a read, or a transaction whose key the next statement
        // reads (created) or creates (rolled back).
        try await withStatementDeadline(statementDeadline) { [self] in try await statement(subjects) }
    }

    private func statement(_ subjects: [SubjectKeyRequests.Subject]) async throws -> [SubjectKeyRequests.Subject: (id: UUID, key: SymmetricKey)] {
        var keys: [SubjectKeyRequests.Subject: (id: UUID, key: SymmetricKey)] = [:]
        func add(_ rows: [(serviceId: UUID, subject: String, id: UUID, key: [UInt8])]) {
            for row in rows {
                keys[SubjectKeyRequests.Subject(serviceId: row.serviceId, subject: row.subject)] = (row.id, SymmetricKey(data: row.key))
            }
        }
        // Most registrations are of a person or device whose key exists (an app registers again
        // at every launch): one plain read, no transaction. Only the others create theirs.
        add(try await SubjectKeys.read(subjects.map { ($0.serviceId, $0.subject) }, wrapping: wrapping, postgres: postgres, logger: logger))
        let missing = subjects.filter { keys[$0] == nil }
        guard !missing.isEmpty else { return keys }
        // In an explicit transaction: a key is returned only once COMMIT has answered (chaos/run
        // found a key lost with a crash of the server while its registration was stored).
        add(
            try await postgres.withTransaction(logger: logger) { [wrapping] connection in
                try await SubjectKeys.createOrRead(missing.map { ($0.serviceId, $0.subject) }, wrapping: wrapping, on: connection, logger: logger)
            })
        return keys
    }

    /// The keys of `ids` that still exist (an erased subject's is gone), in one query.
    package static func keys(
        _ ids: Set<UUID>, wrapping: (any DataKeyWrapping)?, on connection: PostgresConnection, logger: Logger
    ) async throws -> [UUID: SymmetricKey] {
        try await SubjectKeys.keys(ids, wrapping: wrapping, on: connection, logger: logger).mapValues { SymmetricKey(data: $0) }
    }

    /// The registration as version 2, sealed under its subject's key in `serviceId` (created on
    /// first use): what the registration endpoints publish, and what `pushctl topics
    /// upgrade-history` makes of a version-1 registration.
    package func sealed(_ registration: SubscriptionRegistered, serviceId: UUID) async throws -> SealedSubscriptionRegistered {
        let subject = Self.subject(userKey: registration.userKey, appId: registration.appId, tokenDigest: Self.tokenDigest(registration.registrationToken))
        let (subjectId, dataKey) = try await key(serviceId: serviceId, subject: subject)
        return try Self.seal(registration, subjectId: subjectId, key: dataKey)
    }

    /// A version-2 registration: the personal fields sealed under `key`, bound to the app and
    /// the token's digest (a sealed box moved to another device's event does not open).
    package static func seal(_ registration: SubscriptionRegistered, subjectId: UUID, key: SymmetricKey) throws -> SealedSubscriptionRegistered {
        let digest = tokenDigest(registration.registrationToken)
        let fields = SubscriptionPersonalFields(registration).json
        guard let combined = try AES.GCM.seal(fields, using: key, authenticating: Data(context(registration.appId, digest).utf8)).combined else {
            throw PersonalDataError("AES-GCM produced no combined box")
        }
        return SealedSubscriptionRegistered(
            appId: registration.appId, integrationKey: registration.integrationKey, platform: registration.platform, subjectId: subjectId,
            tokenDigest: digest, sealed: combined.base64EncodedString(), registeredAt: registration.registeredAt)
    }

    /// The registration, or nil when `key` does not open it (not its key, or altered).
    package static func open(_ sealed: SealedSubscriptionRegistered, key: SymmetricKey) -> SubscriptionRegistered? {
        guard let combined = Data(base64Encoded: sealed.sealed), let box = try? AES.GCM.SealedBox(combined: combined),
            let plain = try? AES.GCM.open(box, using: key, authenticating: Data(context(sealed.appId, sealed.tokenDigest).utf8)),
            let fields = SubscriptionPersonalFields(json: Array(plain)),
            tokenDigest(fields.registrationToken) == sealed.tokenDigest
        else { return nil }
        return SubscriptionRegistered(sealed, opened: fields)
    }

    static func context(_ appId: UUID, _ digest: String) -> String { "\(appId.uuidString.lowercased()):\(digest)" }
}

/// A data key could not be had; the description never holds key material or personal data.
package struct PersonalDataError: Error, CustomStringConvertible {
    package var description: String
    init(_ description: String) { self.description = description }
}
