import Foundation
import PostgresNIO
import PushEvents
import PushStore
import PushTestSupport
import Testing

/// The deliveries' admin API (the planner's) with operators' personal tokens: every route, every
/// role, a delivery of the operator's own service and one of another (docs/admin-api.md,
/// "Operators and roles"). The operators and tokens are written through their owner's store,
/// as the registration's catalog projection writes them.
@Suite("Operators and roles on the deliveries' admin API", .serialized)
struct DeliveryOperatorRolesTests {
    typealias Route = DocumentedRoute<AdminPermission>

    static let routes: [Route] = [
        // A document the validation refuses (400) once the service is allowed.
        Route(method: "POST", path: "/deliveries", permission: .deliveriesWrite, body: #"{"service": "{service}"}"#, documented: "/admin/v1/deliveries"),
        Route(
            method: "POST", path: "/deliveries/preview", permission: .deliveriesWrite, body: #"{"service": "{service}"}"#,
            documented: "/admin/v1/deliveries/preview"),
        Route(method: "GET", path: "/deliveries?service={service}", permission: .deliveriesRead, documented: "/admin/v1/deliveries"),
        Route(method: "GET", path: "/deliveries/{delivery}", permission: .deliveriesRead, documented: "/admin/v1/deliveries/{deliveryId}"),
        Route(method: "POST", path: "/deliveries/{delivery}/pause", permission: .deliveriesWrite, documented: "/admin/v1/deliveries/{deliveryId}/pause"),
        Route(method: "POST", path: "/deliveries/{delivery}/resume", permission: .deliveriesWrite, documented: "/admin/v1/deliveries/{deliveryId}/resume"),
        // Last: a cancel is for good.
        Route(method: "GET", path: "/delivery-requests/{request}", permission: .deliveriesRead, documented: "/admin/v1/delivery-requests/{requestId}"),
        Route(method: "POST", path: "/deliveries/{delivery}/cancel", permission: .deliveriesWrite, documented: "/admin/v1/deliveries/{deliveryId}/cancel"),
    ]

    @Test("the matrix: every documented route, every role, the operator's own service's delivery and another's; lists filtered")
    func matrix() async throws {
        #expect(Set(Self.routes.map(\.operation)) == (try DocumentedOperations.of("deliveries-openapi.json")))

        let port = try EphemeralPort.next()
        try await PlanningHarness.run(settings: DeliveryAdminTests.settings(port: port)) { h in
            var services: [String] = []
            var deliveries: [String: (delivery: String, request: String)] = [:]
            for _ in 0..<2 {
                let service = try await h.defineService()
                try await h.addSubscriptions(service.apps[0], count: 2)
                let requestId = "roles-\(service.name)"
                // Due in an hour: it stays controllable (pause, resume, cancel) for the matrix.
                try await h.publishRequest(requestJSON(requestId: requestId, service: service.name, sendAt: Date().addingTimeInterval(3600).iso))
                try await eventually("accepted") { try await h.deliveryStatus(requestId: requestId) == "accepted" }
                deliveries[service.name] = (try await h.deliveryId(of: requestId), requestId)
                services.append(service.name)
            }
            let (own, other) = (services[0], services[1])
            var tokens: [AdminRole: String] = [:]
            try await h.postgres.withConnection { connection in
                for role in AdminRole.allCases {
                    let name = "\(role.rawValue)-\(h.suffix)"
                    try await OperatorDirectory.apply(
                        OperatorDefined(name: name, role: role.rawValue, services: [own], active: true), at: Date(), on: connection, logger: h.logger)
                    let (tokenId, token, digest) = OperatorToken.make()
                    try await OperatorDirectory.apply(
                        OperatorTokenIssued(tokenId: tokenId, operatorName: name, digest: digest, expiresAt: Date().addingTimeInterval(3600)), at: Date(),
                        on: connection, logger: h.logger)
                    tokens[role] = token
                }
            }

            var checked = 0
            var audited: [String] = []
            for route in Self.routes {
                for role in AdminRole.allCases {
                    for (service, isOwn) in [(own, true), (other, false)] {
                        let ids = deliveries[service]!
                        func filled(_ text: String) -> String {
                            text.replacingOccurrences(of: "{service}", with: service).replacingOccurrences(of: "{delivery}", with: ids.delivery)
                                .replacingOccurrences(of: "{request}", with: ids.request)
                        }
                        let answer = try await DeliveryAdminTests.call(
                            port: port, route.method, filled(route.path), body: route.body.map(filled), token: tokens[role])
                        if route.method != "GET" {
                            audited.append("\(role.rawValue)-\(h.suffix) \(route.method) /admin/v1\(filled(route.path)) \(answer.status)")
                        }
                        let text = String(decoding: answer.body, as: UTF8.self)
                        if role.permissions.contains(route.permission) && isOwn {
                            #expect(![401, 403].contains(answer.status), "\(role) \(route) on own: \(answer.status) \(text)")
                        } else {
                            #expect(answer.status == 403, "\(role) \(route) on \(isOwn ? "own" : "other"): \(answer.status) \(text)")
                        }
                        checked += 1
                    }
                }
            }
            #expect(checked == Self.routes.count * AdminRole.allCases.count * 2)

            // The audit trail: one AdminActionRecorded per call that changed something (allowed
            // or refused), on the run's audit topic; none for the reads.
            var recorded: [String] = []
            for record in try await h.records(h.configuration.topics.audit.name, openSealed: false) {
                let object = try #require(try JSONSerialization.jsonObject(with: Data(record.value)) as? [String: Any])
                let data = try #require(object["data"] as? [String: Any])
                let name = try #require(data["operatorName"] as? String)
                guard name.hasSuffix("-\(h.suffix)") else { continue }
                recorded.append("\(name) \(data["method"] as? String ?? "") \(data["path"] as? String ?? "") \(data["status"] as? Int ?? 0)")
            }
            #expect(recorded.sorted() == audited.sorted())

            // The list without a service filter shows only the operator's services' deliveries.
            let listed = try await DeliveryAdminTests.call(port: port, "GET", "/deliveries?limit=500", token: tokens[.analyst])
            #expect(listed.status == 200)
            let names = Set(listed.list.compactMap { $0["serviceName"] as? String })
            #expect(names.contains(own) && !names.contains(other), "\(names)")
            #expect(try await DeliveryAdminTests.call(port: port, "GET", "/deliveries/\(deliveries[other]!.delivery)").status == 200, "bootstrap")
            #expect(try await DeliveryAdminTests.call(port: port, "GET", "/deliveries", token: "pat_unknown").status == 401)
        }
    }
}
