import PushSchema
import PushStore
import Testing

@Suite("Schema push assembled from its owners' migrations")
struct SchemaAssemblyTests {
    @Test("every version once, in order; a shared version holds each owner's statements in the owners' order")
    func assembledFromOwners() throws {
        let all = SchemaMigrations.all
        #expect(all.map(\.version) == Migrations.versions)
        for migration in all {
            let parts = SchemaMigrations.owners.flatMap { $0.filter { $0.version == migration.version } }
            #expect(migration.statements == parts.flatMap(\.statements), "migration \(migration.version)")
        }
        // The versions whose tables have several owners, and how many owners each has.
        let shared = Dictionary(grouping: SchemaMigrations.owners.flatMap { $0 }, by: \.version).filter { $0.value.count > 1 }.mapValues(\.count)
        #expect(shared == [3: 2, 6: 2, 8: 2, 13: 2, 15: 2, 17: 2, 18: 3])
    }

    @Test("parts of one version named differently, a version nobody declares and one not listed are refused, naming them")
    func refusals() throws {
        let one = Migration(version: 1, name: "a", statements: ["SELECT 1"])
        #expect(throws: SchemaAssemblyError.self) { try Migrations.assembled(from: [[one]], versions: [1, 2]) }
        do {
            _ = try Migrations.assembled(from: [[one], [Migration(version: 1, name: "b", statements: [])]], versions: [1])
            Issue.record("two names for one version were accepted")
        } catch {
            #expect(error.description == "migration 1 is named \"a\" by one owner and \"b\" by another")
        }
        do {
            _ = try Migrations.assembled(from: [[one, Migration(version: 3, name: "c", statements: [])]], versions: [1, 2])
            Issue.record("a missing and an unknown version were accepted")
        } catch {
            #expect(error.description == "the owners' migrations do not match Migrations.versions: no owner declares 2; 3 not listed in Migrations.versions")
        }
        #expect(
            try Migrations.assembled(from: [[one], [Migration(version: 1, name: "a", statements: ["SELECT 2"])]], versions: [1]).map(\.statements) == [
                ["SELECT 1", "SELECT 2"]
            ])
    }
}
