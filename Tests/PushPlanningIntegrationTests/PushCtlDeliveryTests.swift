import Foundation
import PushTestSupport
import Testing

/// `pushctl deliveries` against the real planner's admin API, broker and database: what an
/// operator types, and what it prints.
@Suite("pushctl deliveries against the running planner", .serialized)
struct PushCtlDeliveryTests {
    /// Runs the built `pushctl` against the planner's admin API on `port`.
    static func pushctl(_ arguments: [String], port: Int, token: String = PlanningHarness.adminToken) async throws -> (status: Int32, output: String) {
        var environment = TestStack.environment
        environment["PUSH_PLANNING_ADMIN_URL"] = "http://127.0.0.1:\(port)"
        environment["PUSH_ADMIN_TOKEN"] = token
        return try await BuiltExecutable.run("pushctl", arguments: arguments, environment: environment)
    }

    /// The JSON documents pushctl printed, in order (each answer of the API, pretty-printed;
    /// `submit --wait` prints two): split where a top-level object or array closes, outside
    /// strings.
    static func documents(_ output: String) -> [Any] {
        var documents: [Any] = []
        var depth = 0
        var inString = false
        var escaped = false
        var start: String.Index?
        for index in output.indices {
            let character = output[index]
            if inString {
                if escaped { escaped = false } else if character == "\\" { escaped = true } else if character == "\"" { inString = false }
                continue
            }
            switch character {
            case "\"": inString = depth > 0
            case "{", "[":
                if depth == 0 { start = index }
                depth += 1
            case "}", "]":
                guard depth > 0 else { continue }
                depth -= 1
                if depth == 0, let begin = start,
                    let document = try? JSONSerialization.jsonObject(with: Data(output[begin...index].utf8))
                {
                    documents.append(document)
                }
            default: break
            }
        }
        return documents
    }

    /// The last JSON object pushctl printed.
    static func object(_ output: String) -> [String: Any] {
        documents(output).last { $0 is [String: Any] } as? [String: Any] ?? [:]
    }

    @Test(
        "preview, submit --wait, request, list, show, pause, resume and cancel from the command line; refusals exit non-zero naming the API's status"
    )
    func deliveriesCommands() async throws {
        let port = try EphemeralPort.next()
        try await PlanningHarness.run(settings: DeliveryAdminTests.settings(port: port)) { h in
            let service = try await h.defineService()
            for app in service.apps { try await h.addSubscriptions(app, count: 5) }
            let requestId = "cli-\(h.suffix)"
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("\(requestId).json")
            try requestJSON(requestId: requestId, service: service.name, content: #"{"title": "Porto", "body": "Hello {{userKey}}"}"#)
                .write(to: file, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(at: file) }

            let preview = try await Self.pushctl(["deliveries", "preview", "--file", file.path, "--samples", "1"], port: port)
            #expect(preview.status == 0, "\(preview.output)")
            #expect(Self.object(preview.output)["targeted"] as? Int == 10)
            #expect(try await h.records(h.topics.deliveryRequests.name).isEmpty, "a preview publishes nothing")

            let submit = try await Self.pushctl(["deliveries", "submit", "--file", file.path, "--wait"], port: port)
            #expect(submit.status == 0, "\(submit.output)")
            let answers = Self.documents(submit.output).compactMap { $0 as? [String: Any] }
            #expect(answers.count == 2, "the answer, then the request's state: \(submit.output)")
            let deliveryId = try #require(answers.first?["deliveryId"] as? String, "\(submit.output)")
            #expect(answers.last?["state"] as? String == "accepted", "--wait prints the request once the planner read it: \(submit.output)")
            #expect(answers.last?["deliveryId"] as? String == deliveryId)

            let request = try await Self.pushctl(["deliveries", "request", "--request-id", requestId], port: port)
            #expect(request.status == 0)
            #expect(Self.object(request.output)["deliveryId"] as? String == deliveryId)

            try await h.waitPlanned(requestId)
            try await eventually("pushctl deliveries list shows the delivery planned") {
                let list = try await Self.pushctl(["deliveries", "list", "--service", service.name], port: port)
                let rows = Self.documents(list.output).last as? [[String: Any]] ?? []
                return list.status == 0 && rows.count == 1 && rows[0]["deliveryId"] as? String == deliveryId && rows[0]["status"] as? String == "planned"
            }
            let show = try await Self.pushctl(["deliveries", "show", "--id", deliveryId], port: port)
            #expect(show.status == 0)
            #expect((Self.object(show.output)["content"] as? [String: Any])?["title"] as? String == "Porto")

            // Sending of a planned delivery can still be held, let go, and stopped for good.
            let pause = try await Self.pushctl(["deliveries", "pause", "--id", deliveryId], port: port)
            #expect(pause.status == 0 && Self.object(pause.output)["state"] as? String == "paused", "\(pause.output)")
            let resume = try await Self.pushctl(["deliveries", "resume", "--id", deliveryId], port: port)
            #expect(resume.status == 0 && Self.object(resume.output)["state"] as? String == "active", "\(resume.output)")
            let cancel = try await Self.pushctl(["deliveries", "cancel", "--id", deliveryId], port: port)
            #expect(cancel.status == 0 && Self.object(cancel.output)["state"] as? String == "cancelled", "\(cancel.output)")

            let refused = try await Self.pushctl(["deliveries", "resume", "--id", deliveryId], port: port)
            #expect(refused.status != 0)
            #expect(refused.output.contains("admin API answered 409"), "\(refused.output)")
            let unknown = try await Self.pushctl(["deliveries", "show", "--id", "2000000000"], port: port)
            #expect(unknown.status != 0)
            #expect(unknown.output.contains("admin API answered 404"), "\(unknown.output)")
            let unauthorized = try await Self.pushctl(["deliveries", "list"], port: port, token: "not-the-token")
            #expect(unauthorized.status != 0)
            #expect(unauthorized.output.contains("admin API answered 401"), "\(unauthorized.output)")
        }
    }
}
