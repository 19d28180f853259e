import Crypto
import Foundation
import PostgresNIO
import PushCredentials
import PushRegistration
import PushTestSupport
import Testing

/// The data keys of many registrations at once: concurrent registrations share
/// statements, and whatever the interleaving, within one instance or across two, a subject has
/// exactly one key.
@Suite("Data keys of concurrent registrations", .serialized)
struct SubjectKeyBatchTests {
    @Test("400 concurrent requests over 20 new subjects, from two instances: one key per subject, one row each")
    func oneKeyPerSubject() async throws {
        try await RegistrationHarness.run { h in
            let serviceId = UUID()
            let subjects = (0..<20).map { "user:batch-\($0)-\(UUID().uuidString.prefix(6))" }
            let wrapping = try CredentialCipher.dataKeys(fromEnvironment: TestStack.environment)
            let first = PersonalDataKeys(postgres: h.postgres, wrapping: wrapping, logger: h.logger)
            let second = PersonalDataKeys(postgres: h.postgres, wrapping: wrapping, logger: h.logger, maximumStatements: 1)
            let answers = try await withThrowingTaskGroup(of: (String, UUID, [UInt8]).self) { group in
                for index in 0..<400 {
                    let keys = index.isMultiple(of: 2) ? first : second
                    let subject = subjects[index % subjects.count]
                    group.addTask {
                        let (id, key) = try await keys.key(serviceId: serviceId, subject: subject)
                        return (subject, id, key.withUnsafeBytes { Array($0) })
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(answers.count == 400)
            for subject in subjects {
                let mine = answers.filter { $0.0 == subject }
                #expect(mine.count == 20)
                #expect(Set(mine.map(\.1)).count == 1, "\(subject) got more than one key id")
                #expect(Set(mine.map(\.2)).count == 1, "\(subject) got more than one key")
            }
            let rows = try await h.postgres.query(
                "SELECT count(*)::int FROM push.subject_keys WHERE service_id = \(serviceId)", logger: h.logger)
            var count = 0
            for try await value in rows.decode(Int.self) { count = value }
            #expect(count == 20)
            let again = try await first.key(serviceId: serviceId, subject: subjects[0])
            #expect(again.id == answers.first { $0.0 == subjects[0] }!.1, "an existing subject's key is read back, not replaced")
        }
    }
}
