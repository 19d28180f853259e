/// One schema change. Applied once, in a transaction, in version order; never edited after it
/// shipped: a correction is a new migration.
package struct Migration: Sendable {
    package var version: Int
    package var name: String
    /// Statements run in order (one statement each: the extended protocol takes one at a time).
    package var statements: [String]

    package init(version: Int, name: String, statements: [String]) {
        self.version = version
        self.name = name
        self.statements = statements
    }
}

/// The versions of schema `push` and how the owners' migrations make one list.
///
/// Each module that owns tables declares their migrations beside its SQL (`StoreSchema`,
/// `RegistrationSchema`, `CredentialsSchema`, `PlanningSchema`, `TrackingSchema`,
/// `SendingSchema`); `SchemaMigrations.all` (module PushSchema, used by `pushctl migrate` and the
/// tests) assembles them with `assembled(from:)`. A service links only its own module, so it
/// checks the database against `versions` (`Migrator.requireCurrentSchema`), and assembling
/// fails unless the owners' versions are exactly these: a new migration is added to its owner
/// and its number here.
package enum Migrations {
    /// Every version, oldest first. 22 and 23 were handed to work on sealing that landed as
    /// other migrations.
    package static let versions: [Int] = Array(1...21) + Array(24...43)

    /// One ordered list from the owners' lists. A version that several owners declare (it changed
    /// tables of each) becomes one migration, their statements in the order of `owners`, applied
    /// in one transaction as before the split. Fails when two parts of a version disagree on its
    /// name or when the versions are not exactly `versions`.
    package static func assembled(from owners: [[Migration]], versions: [Int] = versions) throws(SchemaAssemblyError) -> [Migration] {
        var byVersion: [Int: Migration] = [:]
        for owner in owners {
            for part in owner {
                guard var migration = byVersion[part.version] else {
                    byVersion[part.version] = part
                    continue
                }
                guard migration.name == part.name else {
                    throw SchemaAssemblyError(
                        "migration \(part.version) is named \"\(migration.name)\" by one owner and \"\(part.name)\" by another")
                }
                migration.statements += part.statements
                byVersion[part.version] = migration
            }
        }
        let found = byVersion.keys.sorted()
        guard found == versions else {
            let missing = Set(versions).subtracting(found).sorted()
            let unknown = Set(found).subtracting(versions).sorted()
            throw SchemaAssemblyError(
                "the owners' migrations do not match Migrations.versions: "
                    + (missing.isEmpty ? "" : "no owner declares \(missing.map(String.init).joined(separator: ", "))")
                    + (missing.isEmpty || unknown.isEmpty ? "" : "; ")
                    + (unknown.isEmpty ? "" : "\(unknown.map(String.init).joined(separator: ", ")) not listed in Migrations.versions"))
        }
        return found.compactMap { byVersion[$0] }
    }
}

/// The owners' migrations cannot make one list (a programming error, caught by the tests).
package struct SchemaAssemblyError: Error, Sendable, CustomStringConvertible, Equatable {
    package var description: String
    init(_ description: String) { self.description = description }
}
