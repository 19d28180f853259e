import Foundation
import PostgresNIO
import PushTestSupport
import Testing

/// The console's whole scenario in a real browser, through the real services:
/// the `registration`, `delivery-planning`, `apns-sender`, `fcm-sender`, `tracking-ingestion` and
/// `console` executables and the `apns-simulator` and `fcm-simulator` executables (HTTP/2 over
/// TLS, trusting this run's .p8 key and service account), on topics and consumer groups of its
/// own. Headless Chromium (`scripts/console-scenario.py`) signs in, creates the service and both
/// apps, uploads their credentials, composes and sends a delivery to devices registered through
/// the SDK endpoints (one token the APNs simulator answers 410 Unregistered), watches its report
/// to the final figures, cancels a delivery due in an hour, and finds the quarantined device.
/// Every figure the page showed must equal what docs/analysts.md's queries give; screenshots go
/// to `.local/console-screenshots/` (`s01`…`s17`).
@Suite("The console's whole scenario through the real services", .serialized)
struct ConsoleScenarioTests {
    /// Runs `openssl` with `arguments`; fails the test on a non-zero exit.
    static func openssl(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "openssl \(arguments.joined(separator: " ")) failed")
    }

    static func randomId() -> String { String((0..<10).map { _ in "ABCDEFGHJKLMNPQRSTUVWXYZ0123456789".randomElement()! }) }

    @Test("sign in, create a service and two apps, upload their credentials, send to simulated devices, report equal to SQL, cancel, quarantine")
    func scenario() async throws {
        let root = ConsoleBrowserTests.root
        let python = root.appendingPathComponent(".local/venv/bin/python").path
        try #require(FileManager.default.isExecutableFile(atPath: python), "no .local/venv: run scripts/test (scripts/stack install)")
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium"), "no /usr/bin/chromium: scripts/stack install adds Debian's chromium")
        let suffix = PlanningHarness.makeSuffix()
        try await PlanningHarness.run(suffix: suffix, planner: false) { h in
            // Every topic and consumer group of this run carries the suffix.
            var environment = try PlanningHarness.environment(suffix: suffix)
            for (id, name) in [
                ("SUBSCRIPTIONS", "subscriptions"), ("CATALOG", "catalog"), ("APNS_RETRIES", "apns-retries"), ("FCM_RETRIES", "fcm-retries"),
                ("APNS_TRANSACTIONAL_RETRIES", "apns-tx-retries"), ("FCM_TRANSACTIONAL_RETRIES", "fcm-tx-retries"),
                ("APNS_THROTTLED", "apns-throttled"), ("FCM_THROTTLED", "fcm-throttled"),
            ] {
                environment["PUSH_TOPIC_\(id)"] = "test.\(name).\(suffix)"
                environment["PUSH_TOPIC_\(id)_PARTITIONS"] = "1"
            }
            for (variable, name) in [
                ("REGISTRATION_CATALOG_GROUP", "catalog"), ("REGISTRATION_SUBSCRIPTIONS_GROUP", "subscriptions"), ("REGISTRATION_AUDIT_GROUP", "audit"),
                ("APNS_SENDER_GROUP", "apns-sender"),
                ("FCM_SENDER_GROUP", "fcm-sender"), ("TRACKING_LOG_GROUP", "tracking-log"),
            ] {
                environment[variable] = "test.\(name).\(suffix)"
            }
            let token = "console-scenario-\(UUID().uuidString.lowercased())"
            environment["PUSH_ADMIN_TOKEN"] = token
            environment["PUSH_CREDENTIALS_KEY"] = Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
            environment["PUSH_OPS_HOST"] = "127.0.0.1"
            let topics = try await BuiltExecutable.run("pushctl", arguments: ["topics", "create"], environment: environment)
            try #require(topics.status == 0, "pushctl topics create: \(topics.output)")

            // This run's provider credentials, which the simulators trust.
            let work = FileManager.default.temporaryDirectory.appendingPathComponent("console-scenario-\(suffix)", isDirectory: true)
            try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: work) }
            let (keyId, teamId, bundleId, project) = (Self.randomId(), Self.randomId(), "com.neotrips.console", "neotrips-console")
            let p8 = work.appendingPathComponent("AuthKey_\(keyId).p8")
            try Self.openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", p8.path])
            let rsa = work.appendingPathComponent("fcm-key.pem")
            try Self.openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", rsa.path])
            let serviceAccount = work.appendingPathComponent("\(project)-firebase.json")
            let account: [String: String] = [
                "type": "service_account", "project_id": project, "private_key_id": UUID().uuidString,
                "private_key": try String(contentsOf: rsa, encoding: .utf8),
                "client_email": "firebase-adminsdk@\(project).iam.gserviceaccount.com", "token_uri": "https://oauth2.googleapis.com/token",
            ]
            try JSONSerialization.data(withJSONObject: account, options: [.sortedKeys]).write(to: serviceAccount)
            let tokenFile = work.appendingPathComponent("token")
            try Data(token.utf8).write(to: tokenFile)

            // The simulators (HTTP/2 + TLS), then the six services.
            let (apnsPortFile, fcmPortFile) = (work.appendingPathComponent("apns.port"), work.appendingPathComponent("fcm.port"))
            let (apnsCA, fcmCA) = (work.appendingPathComponent("apns-ca.pem"), work.appendingPathComponent("fcm-ca.pem"))
            let apnsSimulator = try BuiltExecutable(
                "apns-simulator",
                arguments: [
                    "--host", "127.0.0.1", "--port", "0", "--port-file", apnsPortFile.path, "--ca-out", apnsCA.path, "--key", "\(teamId):\(keyId):\(p8.path)",
                    "--topic", bundleId, "--threads", "1",
                ])
            defer { apnsSimulator.killIfRunning() }
            let fcmSimulator = try BuiltExecutable(
                "fcm-simulator",
                arguments: [
                    "--host", "127.0.0.1", "--port", "0", "--port-file", fcmPortFile.path, "--ca-out", fcmCA.path, "--service-account", serviceAccount.path,
                    "--threads", "1",
                ])
            defer { fcmSimulator.killIfRunning() }
            func port(_ file: URL) -> String? {
                (try? String(contentsOf: file, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines).nilIfEmpty
            }
            try await eventually(within: .seconds(60), "the simulators' port files\n\(apnsSimulator.logTail())\n\(fcmSimulator.logTail())") {
                port(apnsPortFile) != nil && port(fcmPortFile) != nil && FileManager.default.fileExists(atPath: apnsCA.path)
                    && FileManager.default.fileExists(atPath: fcmCA.path)
            }
            let apnsURL = "https://127.0.0.1:\(port(apnsPortFile) ?? "")"
            let fcmURL = "https://127.0.0.1:\(port(fcmPortFile) ?? "")"

            let (registrationPort, trackingPort, adminPort, consolePort) = (
                try EphemeralPort.next(), try EphemeralPort.next(), try EphemeralPort.next(), try EphemeralPort.next()
            )
            var services: [(String, BuiltExecutable, Int)] = []
            defer { for (_, process, _) in services { process.killIfRunning() } }
            func start(_ name: String, _ settings: [String: String]) throws {
                let opsPort = try EphemeralPort.next()
                var env = environment
                env["PUSH_OPS_PORT"] = String(opsPort)
                for (key, value) in settings { env[key] = value }
                services.append((name, try BuiltExecutable(name, environment: env), opsPort))
            }
            try start("registration", ["REGISTRATION_HOST": "127.0.0.1", "REGISTRATION_PORT": String(registrationPort), "REGISTRATION_RATE_PER_ADDRESS": "0"])
            try start("delivery-planning", ["PLANNER_ADMIN_PORT": String(adminPort), "PLANNER_POLL_INTERVAL_MS": "100"])
            try start(
                "apns-sender",
                ["APNS_PRODUCTION_URL": apnsURL, "APNS_SANDBOX_URL": apnsURL, "APNS_CA_FILE": apnsCA.path, "APNS_SENDER_CREDENTIAL_CACHE_MS": "500"])
            try start(
                "fcm-sender", ["FCM_BASE_URL": fcmURL, "FCM_TOKEN_URL": "\(fcmURL)/token", "FCM_CA_FILE": fcmCA.path, "FCM_SENDER_CREDENTIAL_CACHE_MS": "500"])
            try start("tracking-ingestion", ["TRACKING_HOST": "127.0.0.1", "TRACKING_PORT": String(trackingPort)])
            try start(
                "console",
                [
                    "CONSOLE_HOST": "127.0.0.1", "CONSOLE_PORT": String(consolePort), "CONSOLE_REFRESH_SECONDS": "1",
                    "CONSOLE_DELIVERIES_API_URL": "http://127.0.0.1:\(adminPort)", "CONSOLE_REGISTRATION_API_URL": "http://127.0.0.1:\(registrationPort)",
                ])
            for (name, process, opsPort) in services {
                do {
                    try await process.waitUntilReady(port: opsPort, within: .seconds(90))
                } catch {
                    Issue.record("\(name) not ready:\n\(process.logTail(lines: 30))")
                    throw error
                }
            }

            // The browser, as a person; it ends when the scenario is done.
            let service = "console-\(suffix)"
            let output = work.appendingPathComponent("result.json")
            let log = work.appendingPathComponent("browser.log")
            FileManager.default.createFile(atPath: log.path, contents: nil)
            let handle = try FileHandle(forWritingTo: log)
            let browser = Process()
            browser.executableURL = URL(fileURLWithPath: python)
            browser.arguments = [
                root.appendingPathComponent("scripts/console-scenario.py").path, "--url", "http://127.0.0.1:\(consolePort)", "--registration",
                "http://127.0.0.1:\(registrationPort)", "--token-file", tokenFile.path, "--service", service, "--bundle-id", bundleId, "--fcm-project",
                project, "--p8", p8.path, "--key-id", keyId, "--team-id", teamId, "--service-account", serviceAccount.path, "--wrong-pem", rsa.path,
                "--apns-url", apnsURL, "--apns-ca", apnsCA.path,
                "--fcm-url", fcmURL, "--fcm-ca", fcmCA.path, "--tracking", "http://127.0.0.1:\(trackingPort)", "--screenshots",
                root.appendingPathComponent(".local/console-screenshots").path, "--out", output.path,
            ]
            browser.standardOutput = handle
            browser.standardError = handle
            try browser.run()
            defer { if browser.isRunning { browser.terminate() } }
            try await eventually(within: .seconds(240), "the browser finished") { !browser.isRunning }
            try? handle.close()
            let run = (status: browser.isRunning ? -1 : browser.terminationStatus, output: (try? String(contentsOf: log, encoding: .utf8)) ?? "")
            let data = try #require(try? Data(contentsOf: output), "the browser wrote no result:\n\(run.output)")
            let result = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            #expect(run.status == 0, "the browser run failed:\n\(run.output)")
            #expect((result["problems"] as? [String]) == [], "\(result["problems"] ?? "")")

            // The catalog, as the forms left it (the registration service's projection).
            let serviceId = try #require(try await h.text("SELECT service_id::text FROM push.services WHERE name = \(service)"), "the service exists")
            #expect(try await h.int("SELECT count(*)::int FROM push.apps WHERE service_id = \(serviceId)::uuid AND credential_id IS NOT NULL") == 2)
            #expect(try await h.text("SELECT label FROM push.apps WHERE service_id = \(serviceId)::uuid AND platform = 'ios'") == "Neo Trips for iPhone")
            #expect(
                try await h.text("SELECT sounds::text FROM push.apps WHERE service_id = \(serviceId)::uuid AND platform = 'ios'")?.contains("Chime") == true)
            #expect(result["editedLabel"] as? String == "Neo Trips for iPhone")
            #expect((result["duplicateServiceProblem"] as? String)?.contains("409") == true, "\(result["duplicateServiceProblem"] ?? "")")
            #expect((result["soundProblem"] as? String)?.contains("sounds, line 1: write name: label") == true, "\(result["soundProblem"] ?? "")")
            #expect((result["wrongP8Problem"] as? String)?.contains("is not a .p8 key") == true, "\(result["wrongP8Problem"] ?? "")")
            #expect(
                (result["wrongKeyProblem"] as? String)?.contains(
                    "refused the credentials (400): privateKey must be the .p8 PEM of a P-256 key (file “fcm-key.pem”)")
                    == true, "\(result["wrongKeyProblem"] ?? "")")
            #expect((result["wrongJSONProblem"] as? String)?.contains("is not a service-account JSON file") == true, "\(result["wrongJSONProblem"] ?? "")")
            let ios = try #require(result["iosCredentials"] as? [[String]])
            #expect(ios.count == 1 && ios[0][0].hasPrefix("apns-token") && ios[0][1].hasPrefix("sha256:") && ios[0][2].contains(keyId), "\(ios)")
            let android = try #require(result["androidCredentials"] as? [[String]])
            #expect(android.count == 1 && android[0][0].hasPrefix("fcm-service-account") && android[0][2].contains(project), "\(android)")
            #expect(result["credentialCells"] as? [String] == ["set", "set"])

            #expect(
                result["capSet"] as? [String] == ["Frequency cap set.", "Frequency cap of \(service): at most 2 bulk deliveries per person in 24 h"],
                "\(result["capSet"] ?? "")")
            #expect(result["capLifted"] as? [String] == ["Frequency cap lifted.", "Frequency cap of \(service): none"], "\(result["capLifted"] ?? "")")
            #expect(
                try await h.text("SELECT coalesce(frequency_cap_messages::text, 'none') FROM push.services WHERE name = \(service)") == "none",
                "lifted in push.services")
            #expect(result["segmentDevices"] as? String == "4", "the Segments page counts the segment's four iPhones: \(result["segmentDevices"] ?? "")")

            // The delivery: live preview, then the report's final figures against the SQL.
            #expect(result["livePreviewTargeted"] as? String == "7", "the live preview's audience")
            let samples = try #require(result["livePreviewSamples"] as? [[Any]])
            #expect(
                samples.map { $0[0] as? String } == ["android", "ios"] && samples.allSatisfy { ($0[1] as? Int ?? 0) > 20 && $0[2] as? Bool == true },
                "\(samples)")
            #expect((result["livePreviewProblem"] as? String)?.contains("Not valid yet") == true, "\(result["livePreviewProblem"] ?? "")")
            #expect(result["reloaded"] as? Bool == false, "the report refreshed itself in place")
            let deliveryId = try #require(result["delivery"] as? String)
            let figures = try #require(result["figures"] as? [String: String])
            #expect(figures["state"] == "finished")
            let funnel = try await ConsoleBrowserTests.rows(
                h, try ConsoleBrowserTests.documentedQuery(containing: "FROM push.delivery_indicators i JOIN push.deliveries d", deliveryId: deliveryId),
                columns: [
                    "to_deliver", "excluded", "sent", "failed", "failed_hard", "failed_soft", "failed_ignored", "impressions", "opens", "expired", "cancelled",
                    "processed",
                ])
            let row = try #require(funnel.first)
            let expected: [String: String] = [
                "targeted": row[0], "excluded": row[1], "sent": row[2], "failed": row[3], "failed_hard": row[4], "failed_soft": row[5],
                "failed_ignored": row[6], "received": row[7], "opened": row[8], "expired": row[9], "cancelled": row[10],
                "pending": String(Int(row[0])! - Int(row[11])!),
            ]
            for (name, value) in expected { #expect(figures[name] == value, "\(name): page \(figures[name] ?? "none"), SQL \(value)") }
            #expect(
                expected["targeted"] == "7" && expected["sent"] == "6" && expected["failed_hard"] == "1" && expected["pending"] == "0"
                    && expected["received"] == "4" && expected["opened"] == "2", "\(expected)")
            #expect(result["delivered"] as? Int == 6, "the simulators took the 6 notifications sent")
            let tracking = try await ConsoleBrowserTests.rows(
                h, try ConsoleBrowserTests.documentedQuery(containing: "date_trunc('hour', first_at)", deliveryId: deliveryId), columns: ["received", "opened"])
            #expect(
                (result["table_tracking"] as? [[String]])?.map { Array($0.dropFirst()) } == tracking,
                "per hour: page \(result["table_tracking"] ?? ""), SQL \(tracking)")
            let failures = try await ConsoleBrowserTests.rows(
                h, try ConsoleBrowserTests.documentedQuery(containing: "SELECT failure_type, failure_reason, platform, count(*)", deliveryId: deliveryId),
                columns: ["failure_type", "failure_reason", "platform", "messages"])
            #expect(result["table_failures"] as? [[String]] == failures, "failures: page \(result["table_failures"] ?? ""), SQL \(failures)")
            #expect(failures.first?.prefix(3) == ["hard", "Unregistered", "ios"], "\(failures)")
            let sends = try await ConsoleBrowserTests.rows(
                h, try ConsoleBrowserTests.documentedQuery(containing: "date_trunc('minute', sent_at)", deliveryId: deliveryId), columns: ["sent"])
            #expect((result["table_sends"] as? [[String]])?.map { Array($0.dropFirst()) } == sends, "sends: page \(result["table_sends"] ?? ""), SQL \(sends)")
            let perApp = try await ConsoleBrowserTests.rows(
                h, try ConsoleBrowserTests.documentedQuery(containing: "count(*) FILTER (WHERE b.status = 'pending')", deliveryId: deliveryId),
                columns: ["app", "platform", "environment", "messages", "sent", "failed", "expired", "cancelled", "pending", "received", "opened"])
            #expect(result["table_apps"] as? [[String]] == perApp, "per app: page \(result["table_apps"] ?? ""), SQL \(perApp)")
            #expect(perApp.count == 2)

            // A delivery composed whole (the platform condition, two language rows, two variants)
            // and sent: its final table per variant equals docs/analysts.md's A/B query.
            #expect(result["wholeTargeted"] as? String == "3", "the live preview's audience: the three Android devices")
            let wholeId = try #require(result["wholeDelivery"] as? String)
            let wholeRows = try await ConsoleBrowserTests.rows(
                h, try ConsoleBrowserTests.documentedQuery(containing: "FROM push.delivery_variants", deliveryId: wholeId),
                columns: ["variant", "messages", "sent", "received", "opened"])
            let wholePage = try #require(result["wholeVariants"] as? [[String]]).map { [$0[0], $0[1], $0[2], $0[4], $0[5]] }
            #expect(Set(wholePage) == Set(wholeRows), "per variant: page \(wholePage), SQL \(wholeRows)")
            #expect(wholeRows.reduce(0) { $0 + Int($1[1])! } == 3 && wholeRows.reduce(0) { $0 + Int($1[2])! } == 3, "\(wholeRows)")
            #expect(Set(wholeRows.map { $0[0] }).isSubset(of: ["A", "B"]))
            let wholeContent = try #require(try await h.text("SELECT content::text FROM push.deliveries WHERE delivery_id = \(wholeId)"))
            let content = try #require(try JSONSerialization.jsonObject(with: Data(wholeContent.utf8)) as? [String: Any])
            let sentVariants = try #require(content["variants"] as? [[String: Any]])
            #expect(sentVariants.map { $0["name"] as? String } == ["A", "B"])
            #expect((sentVariants[0]["languages"] as? [String: Any])?.keys.sorted() == ["de", "fr"], "\(sentVariants[0])")

            // The later delivery, cancelled from the console; the first one untouched.
            let cancelledId = try #require(result["cancelledDelivery"] as? String)
            #expect(result["cancelMessage"] as? String == "Cancelled: nothing more of this delivery is sent.")
            #expect(result["cancelState"] as? String == "cancelled")
            #expect(try await h.text("SELECT state FROM push.delivery_controls WHERE delivery_id = \(cancelledId)") == "cancelled")
            #expect(try await h.text("SELECT state FROM push.delivery_controls WHERE delivery_id = \(deliveryId)") == nil)
            #expect(result["listed"] as? [Bool] == [true, true])

            // The device the APNs simulator refused, quarantined with its reason.
            let devices = try #require(result["devices"] as? [[String: String]])
            #expect(devices.count == 1 && devices.first?["quarantined"] == "true", "\(devices)")
            #expect(devices.first?["quarantine"]?.contains("reason Unregistered") == true, "\(devices)")
            // Its last notifications: the first delivery, refused Unregistered, neither received nor
            // opened; its system once (the SDK sends "iOS 18.1" as the version).
            let notifications = try #require(result["deviceNotifications"] as? [[String]])
            #expect(notifications.count == 1, "\(notifications)")
            #expect(notifications.first.map { [$0[0], $0[1], $0[3], $0[4]] } == [deliveryId, "failed (Unregistered)", "no", "no"], "\(notifications)")
            #expect(result["deviceSystem"] as? [String] == ["iOS 18.1"], "\(result["deviceSystem"] ?? "")")
            // Support's three actions from the device page, each through the registration admin API.
            let actions = try #require(result["deviceActions"] as? [[String: Any]])
            #expect(actions.count == 3)
            #expect((actions.first?["message"] as? String)?.hasPrefix("Quarantine lifted") == true, "\(actions)")
            #expect(actions.map { $0["quarantined"] as? String } == ["false", "false", "false"], "\(actions)")
            #expect((actions[1]["message"] as? String)?.hasPrefix("Unsubscribed:") == true, "\(actions)")
            #expect((actions[1]["subscription"] as? String)?.hasPrefix("Unsubscribed since") == true, "\(actions)")
            #expect((actions[2]["message"] as? String)?.hasPrefix("Subscribed again") == true, "\(actions)")
            #expect(actions[2]["subscription"] as? String == "Subscribed", "\(actions)")
            let dead = try #require(result["deadToken"] as? String)
            #expect(
                try await h.text("SELECT disabled::text || ',' || (unsubscribed_at IS NULL)::text FROM push.subscriptions WHERE registration_token = \(dead)")
                    == "false,true")
            // The audit page: the three calls, as the bootstrap token's (the console's own).
            let audit = try #require(result["auditDeviceCalls"] as? [[String]])
            #expect(audit.count == 3, "\(audit)")
            let iosApp = try #require((result["apps"] as? [String: String])?["ios"])
            #expect(
                audit.map { $0[3] } == [
                    "POST /admin/v1/services/\(service)/resubscribe", "POST /admin/v1/services/\(service)/unsubscribe",
                    "POST /admin/v1/apps/\(iosApp)/quarantine/lift",
                ], "newest first: \(audit)")
            #expect(audit.allSatisfy { $0[4] == "devices:write" && $0[6] == "200" }, "\(audit)")

            // No secret in any log: the admin token, the .p8 key, the service account's key.
            let secrets =
                [token]
                + [p8, rsa].flatMap { file in
                    ((try? String(contentsOf: file, encoding: .utf8)) ?? "").split(separator: "\n").filter { !$0.hasPrefix("-----") }.map(String.init)
                }
            for (name, process, _) in services {
                await process.terminate()
                let log = process.log()
                #expect(!secrets.contains { log.contains($0) }, "a secret in \(name)'s log")
            }
        }
    }
}

extension String {
    fileprivate var nilIfEmpty: String? { isEmpty ? nil : self }
}
