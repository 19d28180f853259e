import Crypto
import Foundation
import Logging
import PostgresNIO
import PushRuntime
import PushTestSupport
import Testing

/// `DELETE /admin/v1/apps/{id}` against the real broker and PostgreSQL: what the deletion
/// removes, and that replaying `push.catalog` and `push.subscriptions` removes it again.
@Suite("Deleting an app", .serialized)
struct AppDeletionTests {
    static func object(_ answer: RegistrationHarness.Answer) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any], "\(answer.body)")
    }

    /// What a user of the database sees of two apps, as text: their `push.apps` rows (without
    /// times), how many sealed credentials each has, whether each is recorded as deleted by the
    /// catalog and by the subscriptions projection, and their subscriptions.
    static func state(_ harness: RegistrationHarness, apps: [UUID]) async throws -> [String] {
        var lines: [String] = []
        for app in apps {
            let rows = try await harness.postgres.query(
                """
                SELECT concat_ws('|', \(app)::text,
                    (SELECT concat_ws(',', label, environment, credential_fingerprint) FROM push.apps WHERE app_id = \(app)),
                    (SELECT count(*) FROM push.app_credentials WHERE app_id = \(app)),
                    (SELECT count(*) FROM push.deleted_apps WHERE app_id = \(app)),
                    (SELECT count(*) FROM push.subscription_deleted_apps WHERE app_id = \(app)))
                """,
                logger: harness.logger
            )
            for try await line in rows.decode(String.self) { lines.append(line) }
        }
        return lines + (try await RegistrationResilienceTests.snapshot(harness, apps: apps))
    }

    @Test("deleting an app removes its subscriptions and its sealed credentials by events; a later registration of it is ignored; a replay ends the same")
    func deleteAndReplay() async throws {
        let suffix = String(UUID().uuidString.prefix(8).lowercased())
        let subscriptionsGroup = "test.subscriptions-projection.\(suffix)"
        let catalogGroup = "test.catalog-projection.\(suffix)"
        let (deleted, kept, serviceId, live) = try await RegistrationHarness.run(suffix: suffix) { harness in
            let name = "del-\(suffix)"
            let service = try await harness.admin("POST", "/services", json: #"{"name": "\#(name)", "label": "Deletion"}"#)
            #expect(service.status == 201, "\(service.body)")
            let serviceId = try #require((try Self.object(service)["serviceId"] as? String).flatMap(UUID.init(uuidString:)))
            var apps: [(id: UUID, key: String)] = []
            for label in ["doomed", "kept"] {
                let app = try Self.object(
                    try await harness.admin(
                        "POST", "/services/\(name)/apps", json: #"{"platform": "ios", "label": "\#(label)", "bundleId": "com.example.app"}"#))
                let id = try #require((app["appId"] as? String).flatMap(UUID.init(uuidString:)))
                let credential = try await harness.admin(
                    "PUT", "/apps/\(id)/credentials",
                    json: String(
                        decoding: try JSONSerialization.data(withJSONObject: [
                            "kind": "apns-token", "keyId": "ABC123DEFG", "teamId": "TEAM123456", "privateKey": P256.Signing.PrivateKey().pemRepresentation,
                        ]), as: UTF8.self))
                #expect(credential.status == 200, "\(credential.body)")
                apps.append((id, try #require(app["integrationKey"] as? String)))
            }
            let (doomed, kept) = (apps[0], apps[1])
            for app in apps {
                for _ in 0..<5 {
                    let body = RegistrationEndpointTests.iosBody(key: app.key, token: RegistrationEndpointTests.hexToken())
                    #expect(try await harness.post("/nms/mobile/1/registerIOS.jssp", body: body).status == 200)
                }
            }
            try await eventually("10 subscriptions projected") {
                try await harness.count("SELECT count(*)::int FROM push.subscriptions WHERE app_id IN (\(doomed.id), \(kept.id))") == 10
            }
            #expect(try await harness.count("SELECT count(*)::int FROM push.app_credentials WHERE app_id = \(doomed.id)") == 1)

            #expect(try await harness.admin("DELETE", "/apps/\(doomed.id)").status == 204)
            // The catalog projection has applied AppDeleted when the admin API answers.
            #expect(try await harness.admin("GET", "/apps/\(doomed.id)").status == 404)
            #expect(try await harness.count("SELECT count(*)::int FROM push.app_credentials WHERE app_id = \(doomed.id)") == 0, "sealed secrets deleted")
            #expect(try await harness.count("SELECT count(*)::int FROM push.deleted_apps WHERE app_id = \(doomed.id)") == 1)
            // The subscriptions projection applies it from push.catalog on its own.
            try await eventually("the deleted app's subscriptions removed") {
                try await harness.count("SELECT count(*)::int FROM push.subscriptions WHERE app_id = \(doomed.id)") == 0
            }
            // A registration of the deleted app published after the deletion (an instance whose
            // app cache still knew the key) is ignored; the other app's go on.
            try await harness.publishRegistration(appId: doomed.id, token: RegistrationEndpointTests.hexToken(), registeredAt: Date())
            let late = RegistrationEndpointTests.hexToken()
            #expect(
                try await harness.post("/nms/mobile/1/registerIOS.jssp", body: RegistrationEndpointTests.iosBody(key: kept.key, token: late)).status == 200)
            // Every record projected: push.subscriptions' 12 and push.catalog's 6.
            try await Self.projected(harness, group: subscriptionsGroup, records: Self.subscriptionRecords + Self.catalogRecords)
            #expect(try await harness.count("SELECT count(*)::int FROM push.subscriptions WHERE app_id = \(doomed.id)") == 0)
            #expect(try await harness.count("SELECT count(*)::int FROM push.subscriptions WHERE app_id = \(kept.id)") == 6)
            #expect(try await harness.count("SELECT count(*)::int FROM push.app_credentials WHERE app_id = \(kept.id)") == 1)
            return (doomed.id, kept.id, serviceId, try await Self.state(harness, apps: [doomed.id, kept.id]))
        }
        #expect(live.count == 2 + 6)

        // With the service stopped, throw both projections away (their rows and positions; the
        // sealed credentials are not a projection and stay), then replay the two topics.
        let configuration = try RuntimeConfiguration(service: "registration-tests", defaultOpsPort: 0)
        let postgres = PostgresClient(configuration: configuration.postgres.clientConfiguration, backgroundLogger: Logger(label: "rebuild"))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { await postgres.run() }
            let apps = [deleted, kept]
            try await postgres.query("DELETE FROM push.subscriptions WHERE app_id = ANY(\(apps))")
            try await postgres.query("DELETE FROM push.subscription_deleted_apps WHERE app_id = ANY(\(apps))")
            try await postgres.query("DELETE FROM push.apps WHERE app_id = ANY(\(apps))")
            try await postgres.query("DELETE FROM push.deleted_apps WHERE app_id = ANY(\(apps))")
            try await postgres.query("DELETE FROM push.services WHERE service_id = \(serviceId)")
            try await postgres.query("DELETE FROM push.consumer_offsets WHERE group_id IN (\(subscriptionsGroup), \(catalogGroup))")
            tasks.cancelAll()
        }
        try await RegistrationHarness.run(suffix: suffix) { harness in
            try await Self.projected(harness, group: catalogGroup, records: Self.catalogRecords)
            try await Self.projected(harness, group: subscriptionsGroup, records: Self.subscriptionRecords + Self.catalogRecords)
            #expect(try await Self.state(harness, apps: [deleted, kept]) == live)
        }
    }

    /// What the test publishes on `push.subscriptions` (10 registrations, the deleted app's late
    /// one, the kept app's late one) and `push.catalog` (a service, two apps, two credentials, the
    /// deletion). The topics are this run's own, so their offsets start at 0.
    static let subscriptionRecords = 12
    static let catalogRecords = 6

    /// Waits until `group` has projected `records` records (its next offsets add up to that).
    static func projected(_ harness: RegistrationHarness, group: String, records: Int) async throws {
        try await eventually("\(group) projected \(records) records") {
            try await harness.count("SELECT coalesce(sum(next_offset), 0)::int FROM push.consumer_offsets WHERE group_id = \(group)") == records
        }
    }
}
