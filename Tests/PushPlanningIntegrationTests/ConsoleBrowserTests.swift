import Foundation
import Kafka
import PostgresNIO
import PushEvents
import PushTestSupport
import Testing

/// The console (the real `console` executable) in a real browser: headless Chromium from Debian
/// (`/usr/bin/chromium`) driven by Playwright for Python (`scripts/console-browser.py`, from the
/// project's `.local/venv`). The delivery is planned by the real planner with its projections and
/// gets its results and hits as the senders and the tracking endpoint publish them (the
/// indicators' harness); the browser watches its report refresh itself to the final figures, and
/// every figure it read must equal what docs/analysts.md's queries give. Screenshots of each page
/// are kept under `.local/console-screenshots/` (CI keeps them as artefacts).
@Suite("The console in a browser", .serialized)
struct ConsoleBrowserTests {
    /// The console's environment as an operator starts it on the test stack: the admin token,
    /// its pages on 127.0.0.1:`port`, its /health and /metrics on `opsPort`.
    static func consoleEnvironment(token: String, port: Int, opsPort: Int) -> [String: String] {
        var environment = TestStack.environment
        environment["PUSH_ADMIN_TOKEN"] = token
        environment["CONSOLE_HOST"] = "127.0.0.1"
        environment["CONSOLE_PORT"] = String(port)
        environment["PUSH_OPS_PORT"] = String(opsPort)
        return environment
    }

    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// A ```sql block of docs/analysts.md: the one containing `marker`, for `deliveryId`.
    static func documentedQuery(containing marker: String, deliveryId: String) throws -> PostgresQuery {
        let text = try String(contentsOf: root.appendingPathComponent("docs/analysts.md"), encoding: .utf8)
        let blocks = text.components(separatedBy: "```sql\n").dropFirst().map { $0.components(separatedBy: "```").first ?? "" }
        let block = try #require(blocks.first { $0.contains(marker) }, "docs/analysts.md has a query with \(marker)")
        let sql = block.replacingOccurrences(of: ":'delivery_id'", with: "'\(deliveryId)'")
            .trimmingCharacters(in: .whitespacesAndNewlines).trimmingCharacters(in: CharacterSet(charactersIn: ";"))
        return PostgresQuery(unsafeSQL: sql)
    }

    /// The rows of a documented query, each column as the page writes it (integers in decimal,
    /// text as is, null as an em dash); `columns` picks and orders them.
    static func rows(_ h: PlanningHarness, _ query: PostgresQuery, columns: [String]) async throws -> [[String]] {
        var result: [[String]] = []
        for try await row in try await h.postgres.query(query, logger: h.logger) {
            let r = row.makeRandomAccess()
            result.append(
                try columns.map { name in
                    let cell = r[name]
                    do {
                        return try cell.decode(Int?.self).map(String.init) ?? "—"
                    } catch {
                        return try cell.decode(String?.self) ?? "—"
                    }
                })
        }
        return result
    }

    @Test("sign-in, the deliveries list, a report refreshing itself to final figures equal to the analysts' queries, a quarantined device")
    func reportInBrowser() async throws {
        let python = Self.root.appendingPathComponent(".local/venv/bin/python").path
        try #require(FileManager.default.isExecutableFile(atPath: python), "no .local/venv: run scripts/test (scripts/stack install)")
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium"), "no /usr/bin/chromium: scripts/stack install adds Debian's chromium")
        // The planner serves the deliveries' admin API, which the console cancels through.
        let adminPort = try EphemeralPort.next()
        var settings = PlanningHarness.testSettings
        settings.adminPort = adminPort
        try await DeliveryIndicatorTests.run(settings: settings) { h in
            // A delivery to 6 iOS and 6 Android devices, one iOS device quarantined.
            let (service, apps) = try await h.defineService(sounds: ["chime.caf"])
            let (ios, android) = (apps[0], apps[1])
            // Another service, whose sounds the compose page offers once it is chosen.
            let (otherService, _) = try await h.defineService(platforms: ["ios"], sounds: ["bell.caf"])
            // Three calls in the audit trail, as the registration service's projection writes
            // them: the browser filters one operator's deliveries:write calls.
            let auditOperator = "alice-\(h.suffix)"
            for (name, permission, status, minutes) in [
                (auditOperator, "deliveries:write", 202, 2), (auditOperator, "deliveries:write", 403, 1), (auditOperator, "devices:read", 200, 0),
            ] {
                try await h.postgres.query(
                    """
                    INSERT INTO push.audit_log (audit_id, recorded_at, operator_name, role, method, path, permission, status, request_id, service)
                    VALUES (\(UUID()), \(Date().addingTimeInterval(-60 * Double(minutes))), \(name), 'marketer', 'POST', '/deliveries', \(permission), \(status),
                            \("audit-\(minutes)-\(h.suffix)"), \(service))
                    """,
                    logger: h.logger)
            }
            try await h.addSubscriptions(ios, count: 6)
            try await h.addSubscriptions(android, count: 6)
            let quarantinedToken = try await h.token(ios, 1)
            try await h.postgres.query(
                "UPDATE push.subscriptions SET disabled = true, disabled_reason = 'Unregistered', disabled_at = now() WHERE app_id = \(ios.appId) AND user_key = 'user1'",
                logger: h.logger)
            // French devices for the compose page's language rows: users 2 and 4 of each app.
            try await h.postgres.query(
                "UPDATE push.subscriptions SET os_language = 'fr-FR' WHERE app_id IN (\(ios.appId), \(android.appId)) AND user_key IN ('user2', 'user4')",
                logger: h.logger)
            // A segment the compose page names: tier silver (users 1, 3, 5 of each app).
            try await h.postgres.query(
                """
                INSERT INTO push.segments (service_id, name, version, filter, defined_at)
                SELECT service_id, 'silver', 1, '{"param": "tier", "op": "=", "value": "silver"}'::jsonb, now() FROM push.services WHERE name = \(service)
                """,
                logger: h.logger)
            // Two A/B variants: the report's per-variant table is read too.
            let requestId = "console-\(h.suffix)"
            let variants = #"""
                {"variants": [{"name": "A", "share": 50, "title": "Lisbon is waiting", "body": "Hello {{userKey}}"},
                              {"name": "B", "share": 50, "body": "Lisbon, {{userKey}}?"}]}
                """#
            try await h.publishRequest(requestJSON(requestId: requestId, service: service, content: variants), key: requestId)
            let deliveryId = try await h.waitPlanned(requestId)
            try await eventually("to_deliver set") { try await DeliveryIndicatorTests.indicators(h, deliveryId)?.toDeliver == 11 }
            let m = try await h.plannedMessages(deliveryId)
            #expect(m.count == 11)

            // 0-3 sent, 4 hard, 5 soft, 6 ignored, 7 expired; 8-10 pending until the browser watches.
            let now = Date()
            var results = try (0..<4).map { i in
                try DeliveryIndicatorTests.result(h, MessageSent(message: m[i], providerMessageId: "p\(i)", attempts: 1, sentAt: now), key: m[i].messageId)
            }
            for (i, type, reason) in [(4, "hard", "Unregistered"), (5, "soft", "payload-too-large"), (6, "ignored", "connection-lost")] {
                results.append(
                    try DeliveryIndicatorTests.result(
                        h, MessageFailed(message: m[i], failureType: type, reason: reason, attempts: 2, failedAt: now), key: m[i].messageId))
            }
            results.append(try DeliveryIndicatorTests.result(h, MessageExpired(message: m[7], attempts: 3, expiredAt: now), key: m[7].messageId))
            try await DeliveryIndicatorTests.publish(h, results)
            let broadLogGroup = "test.broad-log.\(h.suffix)"
            try await DeliveryIndicatorTests.waitProjected(h, group: broadLogGroup, topic: h.topics.messageResults.name, count: results.count)
            let hits = [
                DeliveryIndicatorTests.trackingHit(m[0], delivery: deliveryId, tag: 1), DeliveryIndicatorTests.trackingHit(m[1], delivery: deliveryId, tag: 1),
                DeliveryIndicatorTests.trackingHit(m[0], delivery: deliveryId, tag: 2, at: now.addingTimeInterval(60)),
                DeliveryIndicatorTests.trackingHit(m[2], delivery: deliveryId, tag: 2, at: now.addingTimeInterval(3700)),
            ]
            try await DeliveryIndicatorTests.publish(h, try hits.map { try DeliveryIndicatorTests.hit(h, $0) })
            try await DeliveryIndicatorTests.waitProjected(
                h, group: DeliveryIndicatorTests.trackingGroup(h.suffix), topic: h.topics.tracking.name, count: hits.count)

            // Another delivery, due in an hour: the one the browser cancels.
            let laterRequest = "console-later-\(h.suffix)"
            try await h.publishRequest(
                requestJSON(requestId: laterRequest, service: service, sendAt: Date().addingTimeInterval(3600).iso), key: laterRequest)
            try await eventually("the later delivery accepted") { try await h.deliveryStatus(requestId: laterRequest) == "accepted" }
            let laterId = try await h.deliveryId(of: laterRequest)

            // The console, as an operator starts it, with the planner's admin token.
            let token = PlanningHarness.adminToken
            let port = try EphemeralPort.next()
            let opsPort = try EphemeralPort.next()
            var environment = Self.consoleEnvironment(token: token, port: port, opsPort: opsPort)
            environment["CONSOLE_REFRESH_SECONDS"] = "1"
            environment["CONSOLE_DELIVERIES_API_URL"] = "http://127.0.0.1:\(adminPort)"
            let console = try BuiltExecutable("console", environment: environment)
            defer { console.killIfRunning() }
            try await console.waitUntilReady(port: opsPort)

            // The browser, told where; it says "report-open" once it watches the running report.
            let work = FileManager.default.temporaryDirectory.appendingPathComponent("console-browser-\(h.suffix)", isDirectory: true)
            try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
            let tokenFile = work.appendingPathComponent("token")
            try Data(token.utf8).write(to: tokenFile)
            let output = work.appendingPathComponent("result.json")
            let log = work.appendingPathComponent("browser.log")
            FileManager.default.createFile(atPath: log.path, contents: nil)
            let handle = try FileHandle(forWritingTo: log)
            let browser = Process()
            browser.executableURL = URL(fileURLWithPath: python)
            browser.arguments = [
                Self.root.appendingPathComponent("scripts/console-browser.py").path, "--url", "http://127.0.0.1:\(port)", "--token-file", tokenFile.path,
                "--delivery", deliveryId, "--device-search", quarantinedToken.uppercased(), "--cancel-delivery", laterId, "--service", service,
                "--other-service", otherService, "--audit-operator", auditOperator,
                "--screenshots", Self.root.appendingPathComponent(".local/console-screenshots").path, "--out", output.path,
            ]
            browser.standardOutput = handle
            browser.standardError = handle
            try browser.run()
            defer { if browser.isRunning { browser.terminate() } }
            func browserLog() -> String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
            try await eventually(within: .seconds(120), "the browser watches the running report\n\(browserLog())") {
                if !browser.isRunning { return true }
                return browserLog().contains("report-open")
            }
            try #require(browser.isRunning, "the browser ended before it watched the report:\n\(browserLog())")

            // The rest of the delivery ends while the page is open.
            let late = try (8..<11).map { i in
                try DeliveryIndicatorTests.result(
                    h, MessageSent(message: m[i], providerMessageId: "p\(i)", attempts: 1, sentAt: now.addingTimeInterval(120)), key: m[i].messageId)
            }
            try await DeliveryIndicatorTests.publish(h, late)
            try await eventually(within: .seconds(150), "the browser finished") { !browser.isRunning }
            try? handle.close()
            #expect(browser.terminationStatus == 0, "the browser run failed:\n\(browserLog())")
            let data = try #require(try? Data(contentsOf: output), "the browser wrote no result:\n\(browserLog())")
            let result = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            #expect((result["problems"] as? [String]) == [], "\(result["problems"] ?? "")")
            #expect(result["initialPending"] as? String == "3", "the running report showed 3 pending first")
            #expect(result["reloaded"] as? Bool == false, "the report refreshed itself in place, without a reload of the page")
            #expect(result["charts"] as? Int == 3, "funnel, sends and receptions/opens charts")
            let figures = try #require(result["figures"] as? [String: String])
            #expect(figures["state"] == "finished")

            // The funnel against docs/analysts.md's indicator query.
            let funnel = try await Self.rows(
                h, try Self.documentedQuery(containing: "FROM push.delivery_indicators i JOIN push.deliveries d", deliveryId: deliveryId),
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
            #expect(expected["sent"] == "7" && expected["pending"] == "0" && expected["opened"] == "2", "the delivery's known outcome: \(expected)")

            // Failures, sends per minute, receptions and opens per hour, per app.
            let failures = try await Self.rows(
                h, try Self.documentedQuery(containing: "SELECT failure_type, failure_reason, platform, count(*)", deliveryId: deliveryId),
                columns: ["failure_type", "failure_reason", "platform", "messages"])
            #expect(result["failures"] as? [[String]] == failures, "failures: page \(result["failures"] ?? ""), SQL \(failures)")
            #expect(failures.count == 3)
            let sends = try await Self.rows(
                h, try Self.documentedQuery(containing: "date_trunc('minute', sent_at)", deliveryId: deliveryId), columns: ["sent"])
            #expect((result["sends"] as? [[String]])?.map { Array($0.dropFirst()) } == sends, "sends per minute: page \(result["sends"] ?? ""), SQL \(sends)")
            #expect(sends.compactMap { Int($0[0]) }.reduce(0, +) == 7)
            let tracking = try await Self.rows(
                h, try Self.documentedQuery(containing: "date_trunc('hour', first_at)", deliveryId: deliveryId), columns: ["received", "opened"])
            #expect(
                (result["tracking"] as? [[String]])?.map { Array($0.dropFirst()) } == tracking, "per hour: page \(result["tracking"] ?? ""), SQL \(tracking)")
            let perApp = try await Self.rows(
                h, try Self.documentedQuery(containing: "count(*) FILTER (WHERE b.status = 'pending')", deliveryId: deliveryId),
                columns: ["app", "platform", "environment", "messages", "sent", "failed", "expired", "cancelled", "pending", "received", "opened"])
            #expect(result["apps"] as? [[String]] == perApp, "per app: page \(result["apps"] ?? ""), SQL \(perApp)")
            #expect(perApp.count == 2)

            // The quarantined device, found by its token typed in capitals.
            let devices = try #require(result["devices"] as? [[String: String]])
            #expect(devices.count == 1)
            #expect(devices.first?["quarantined"] == "true")
            #expect(devices.first?["quarantine"]?.contains("reason Unregistered") == true, "\(devices)")

            // The catalog: both apps of the service with their integration keys to copy.
            #expect(result["catalogKeys"] as? [String] == [ios.integrationKey, android.integrationKey].sorted())
            #expect(result["copyButtons"] as? Int == 2)

            // Compose: the preview's audience and payloads, then a proof through the admin API.
            #expect(result["zoneDefault"] as? String == "Asia/Tokyo", "the send time's zone starts as the browser's")
            #expect(result["iosSounds"] as? [String] == ["default", "chime.caf"], "\(result["iosSounds"] ?? "none")")
            #expect(result["androidSounds"] as? [String] == ["default", "chime.caf"])
            #expect(result["otherIosSounds"] as? [String] == ["default", "bell.caf"], "the suggestions follow the service chosen")
            #expect(
                (result["languageProblem"] as? String)?.hasPrefix("content.languages.de.body is required") == true,
                "the live preview's refusal at the row's message: \(result["languageProblem"] ?? "nothing shown there")")
            #expect(result["languageProblemInvalid"] as? String == "true")
            #expect(result["languageProblemGone"] as? Bool == true, "emptied, the row's mark goes with the next answer")
            #expect(result["languageProblemInvalidAfter"] == nil || result["languageProblemInvalidAfter"] is NSNull)
            let day = try #require(result["sendAtDay"] as? String)
            #expect(
                result["sendAtPreview"] as? String == "\(day) 00:30 UTC (09:30 Asia/Tokyo)",
                "09:30 in Tokyo, shown in UTC live: \(result["sendAtPreview"] ?? result["sendAtProblem"] ?? "nothing shown")")
            #expect(result["previewTargeted"] as? String == "11")
            #expect(result["previewExcluded"] as? String == "1")
            let samples = try #require(result["previewSamples"] as? [[Any]])
            #expect(samples.map { $0[0] as? String } == ["android", "ios"], "one sample payload per app")
            #expect(samples.allSatisfy { ($0[1] as? Int ?? 0) > 20 }, "each sample with its size: \(samples)")
            #expect(result["previewKeepsForm"] as? String == "Hello {{userKey}}", "the form keeps what was typed")
            #expect(result["filterTargeted"] as? String == "3", "tier gold (users 2, 4, 6) on the iOS app, counted live")
            #expect(result["segmentTargeted"] as? String == "5", "segment silver: users 1, 3, 5 of both apps, iOS user1 quarantined")
            #expect(
                result["languageDevices"] as? [String: String] == ["fr": "4", "": "7"],
                "a French row: users 2 and 4 of both apps get it, the other 7 the default texts; \(result["languageDevices"] ?? "none")")
            #expect(
                (result["filterProblem"] as? String)?.contains("audience.filter.all[1].op 'between' does not apply to device field platform") == true,
                "\(result["filterProblem"] ?? "no problem shown")")
            #expect(
                (result["colorProblem"] as? String)?.contains("content.android.color must be #rrggbb") == true,
                "the refused colour is named next to its input: \(result["colorProblem"] ?? "nothing shown there")")
            #expect(result["colorDescribedBy"] as? String == "androidColor-problem")
            #expect(result["levelKept"] as? String == "time-sensitive", "the interruption level chosen is kept")
            let proofURL = try #require(result["proofURL"] as? String)
            let proofId = try #require(proofURL.split(separator: "/").last?.split(separator: "?").first.map(String.init))
            #expect(proofURL.hasSuffix("?submitted=proof"), "\(proofURL)")
            #expect(result["proofMessage"] as? String == "Proof sent to its test recipients only. Its report follows it below.")
            #expect(try await h.text("SELECT proof::text FROM push.deliveries WHERE delivery_id = \(proofId)") == "true")
            #expect(try await h.text("SELECT content->>'body' FROM push.deliveries WHERE delivery_id = \(proofId)") == "Hello {{userKey}}")

            #expect(
                result["variantDevices"] as? [String: String] == ["A": "6", "B": "5"],
                "a second variant at 50 %: the 11 targeted devices in whole shares; \(result["variantDevices"] ?? "none")")

            // The report's A/B table against docs/analysts.md's A/B query (variant, messages, sent, received, opened).
            let variantRows = try await Self.rows(
                h, try Self.documentedQuery(containing: "FROM push.delivery_variants", deliveryId: deliveryId),
                columns: ["variant", "messages", "sent", "received", "opened"])
            let pageVariants = try #require(result["variants"] as? [[String]]).map { [$0[0], $0[1], $0[2], $0[4], $0[5]] }
            #expect(variantRows.count == 2, "both variants have messages with an outcome: \(variantRows)")
            #expect(Set(pageVariants) == Set(variantRows), "page \(pageVariants), SQL \(variantRows)")

            // The later delivery, cancelled from its report page through the admin API.
            // The audit page, filtered from its form: the operator's two deliveries:write calls,
            // newest first, the refused one marked.
            #expect((result["auditURL"] as? String)?.contains("permission=deliveries%3Awrite") == true, "\(result["auditURL"] ?? "")")
            let audit = try #require(result["audit"] as? [[String]])
            #expect(audit.map { $0.last } == ["audit-1-\(h.suffix)", "audit-2-\(h.suffix)"], "newest first: \(audit)")
            #expect(audit.map { $0[6] } == ["403", "202"])
            #expect(audit.allSatisfy { $0[1] == auditOperator && $0[4] == "deliveries:write" && $0[5] == service })
            #expect(result["auditRefusedRows"] as? Int == 1)
            #expect(result["cancelRefusedUnconfirmed"] as? Bool == true, "the cancel needs its confirmation box ticked")
            #expect(result["cancelMessage"] as? String == "Cancelled: nothing more of this delivery is sent.")
            #expect(result["cancelState"] as? String == "cancelled")
            #expect(result["controlsAfterCancel"] as? Int == 0, "no control is offered for a cancelled delivery")
            #expect(try await h.text("SELECT state FROM push.delivery_controls WHERE delivery_id = \(laterId)") == "cancelled")
            #expect(try await h.text("SELECT state FROM push.delivery_controls WHERE delivery_id = \(deliveryId)") == nil, "the other delivery untouched")

            await console.terminate()
            #expect(!console.log().contains(token), "the admin token never reaches the console's log")
            try? FileManager.default.removeItem(at: work)
        }
    }
}
