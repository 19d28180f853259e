import Foundation
import Hummingbird
import Logging
import NIOCore
import PushRuntime
import PushStore
import PushWire

/// The console's routes. Every page but the sign-in form needs a session: without one (no
/// cookie, a forged or expired one) a page redirects to the sign-in form and the report's
/// refreshing section answers 401, never data. Every form posts its session's CSRF token.
package struct ConsoleEndpoints: Sendable {
    let token: AdminToken
    let admin: ConsoleAdminClient
    let sessions: ConsoleSessions
    let reports: ConsoleReports
    let settings: ConsoleSettings
    let logger: Logger
    let signInLimiter: SignInLimiter

    package init(
        token: AdminToken, admin: ConsoleAdminClient, sessions: ConsoleSessions, reports: ConsoleReports, settings: ConsoleSettings, logger: Logger
    ) {
        self.token = token
        self.admin = admin
        self.sessions = sessions
        self.reports = reports
        self.settings = settings
        self.logger = logger
        self.signInLimiter = SignInLimiter(maxFailures: settings.signInMaxFailures, window: .seconds(settings.signInLockoutSeconds))
    }

    package func addRoutes<Context: RemoteAddressRequestContext>(to router: Router<Context>) {
        router.get("/assets/console.css") { _, _ in Self.asset(ConsoleAssets.css, type: "text/css; charset=utf-8") }
        router.get("/assets/console.js") { _, _ in Self.asset(ConsoleAssets.javascript, type: "text/javascript; charset=utf-8") }
        router.get("/assets/icon.svg") { _, _ in Self.asset(ConsoleAssets.icon, type: "image/svg+xml") }
        router.get("/favicon.ico") { _, _ in ConsoleHTML.redirect(to: "/assets/icon.svg") }
        router.get("/") { request, _ in
            guard case .signedIn = await visitor(request) else { return Self.toSignIn(next: "/deliveries") }
            return ConsoleHTML.redirect(to: "/deliveries")
        }
        router.get("/signin") { request, _ in
            ConsoleHTML.html(
                .ok, ConsolePages.signIn(formToken: sessions.signInFormToken(), next: Self.safeNext(request.uri.queryParameters.get("next")), problem: nil))
        }
        router.post("/signin") { request, context in
            let address = ClientAddress.resolve(
                peer: context.remoteAddress?.ipAddress ?? "unknown", forwardedFor: request.headers[values: Self.forwardedFor],
                trusted: settings.trustedProxies)
            return try await signIn(request, from: address)
        }
        // A named operator's session token is revoked (the copied cookie dies with it).
        router.post("/signout") { request, _ in
            try await withForm(request, .session) { session, _ in
                if session.session.bearer != nil {
                    let (answer, _) = await session.admin.catalog("DELETE", "/session")
                    if !answer.accepted { logger.warning("Console sign-out: the session token was not revoked", metadata: ["status": "\(answer.status)"]) }
                }
                return ConsoleHTML.redirect(to: "/signin", headers: [.setCookie: clearedCookie(request)])
            }
        }
        router.get("/deliveries") { request, _ in
            try await page(request, .deliveriesRead) { session in
                let proofs = request.uri.queryParameters.get("proofs") == "1"
                let rows = try await reports.deliveries(includeProofs: proofs).filter { session.principal.mayActOn(service: $0.serviceName) }
                return ConsoleHTML.html(.ok, ConsolePages.deliveries(rows, includeProofs: proofs, csrf: session.csrfToken))
            }
        }
        router.get("/deliveries/:id") { request, context in
            let id = try context.parameters.require("id")
            return try await page(request, .deliveriesRead) { session in
                guard let report = try await report(id, for: session.principal) else {
                    return ConsoleHTML.html(.notFound, ConsolePages.notFound("No delivery \(id.prefix(64)).", csrf: session.csrfToken))
                }
                let query = request.uri.queryParameters
                var message = query.get("done").flatMap { ConsolePages.Control(rawValue: $0) }.map { ConsolePages.Message.done($0) }
                if let submitted = query.get("submitted") { message = .submitted(proof: submitted == "proof") }
                return ConsoleHTML.html(.ok, ConsolePages.reportPage(report, csrf: session.csrfToken, message: message))
            }
        }
        router.get("/deliveries/new") { request, _ in
            try await page(request, .deliveriesWrite) { session in
                ConsoleHTML.html(
                    .ok,
                    ConsolePages.compose(ConsoleComposer(), catalog: try await composeCatalog(session), preview: nil, problem: nil, csrf: session.csrfToken))
            }
        }
        // Preview, proof, send: the request document goes to the deliveries' admin API, which
        // validates it, previews it (nothing published) or accepts it.
        router.post("/deliveries/new") { request, _ in
            try await withForm(request, .deliveriesWrite) { session, fields in
                let form = ConsoleComposer(fields: fields)
                let step = fields["step"] ?? "preview"
                let requestId = "console-\(UUID().uuidString.lowercased())"
                let document: Data
                do {
                    document = try form.document(requestId: requestId, proof: step == "proof")
                } catch let problem as ConsoleComposer.ComposerProblem {
                    return ConsoleHTML.html(
                        .unprocessableContent,
                        ConsolePages.compose(
                            form, catalog: try await composeCatalog(session), preview: nil, problem: problem.description, csrf: session.csrfToken,
                            problems: [problem.description]))
                }
                let (answer, json) = await session.admin.submit(document, previewOnly: step == "preview")
                if answer.accepted, step != "preview", let deliveryId = json["deliveryId"] as? String {
                    logger.info("Console: delivery submitted", metadata: ["delivery": "\(deliveryId)", "proof": "\(step == "proof")"])
                    // The report needs the deliveries projection's row: wait for it a little.
                    _ = try await reports.awaitDelivery(deliveryId, timeout: .seconds(10))
                    return ConsoleHTML.redirect(to: "/deliveries/\(ConsoleHTML.queryValue(deliveryId))?submitted=\(step == "proof" ? "proof" : "send")")
                }
                let problem = answer.accepted ? nil : "\(answer.error ?? "refused") (\(answer.status))"
                return ConsoleHTML.html(
                    answer.accepted ? .ok : .unprocessableContent,
                    ConsolePages.compose(
                        form, catalog: try await composeCatalog(session), preview: answer.accepted ? json : nil, problem: problem, csrf: session.csrfToken,
                        problems: answer.accepted ? [] : answer.problems))
            }
        }
        // The live preview while one types (console.js posts the compose form here, debounced):
        // the admin API's dry run of the draft as HTML, or why the draft is not valid yet.
        // Always 200 for a signed-in session with its CSRF token (an invalid draft is an answer,
        // not a failed request); the admin API's own failure (unreachable) says so in the same place.
        router.post("/deliveries/preview") { request, _ in
            try await withForm(request, .deliveriesWrite) { session, fields in
                let form = ConsoleComposer(fields: fields)
                let document: Data
                do {
                    document = try form.document(requestId: "console-preview-\(UUID().uuidString.lowercased())", proof: false)
                } catch let problem as ConsoleComposer.ComposerProblem {
                    return ConsoleHTML.html(
                        .ok, ConsolePages.previewContent(nil, problem: problem.description, fieldProblems: form.fieldProblems([problem.description])))
                }
                let (answer, json) = await session.admin.submit(document, previewOnly: true)
                let problem = answer.accepted ? nil : "\(answer.error ?? "refused") (\(answer.status))"
                return ConsoleHTML.html(
                    .ok,
                    ConsolePages.previewContent(
                        answer.accepted ? json : nil, problem: problem, sendAt: form.sendAtSummary,
                        fieldProblems: answer.accepted ? [] : form.fieldProblems(answer.problems)))
            }
        }
        // Cancel, pause, resume: through the deliveries' admin API, which answers once the
        // control is applied (docs/admin-api.md); its refusal is shown on the report page.
        router.post("/deliveries/:id/control") { request, context in
            let id = try context.parameters.require("id")
            return try await withForm(request, .deliveriesWrite) { session, fields in
                guard let control = fields["action"].flatMap(ConsolePages.Control.init(rawValue:)) else {
                    return ConsoleHTML.html(.badRequest, ConsolePages.notFound("Unknown action: cancel, pause or resume.", csrf: session.csrfToken))
                }
                var problem: String?
                if control == .cancel && fields["confirm"] != "yes" {
                    problem = "not cancelled: tick “Yes, cancel this delivery for good” first"
                } else {
                    let answer = await session.admin.control(control.rawValue, deliveryId: id)
                    if answer.accepted {
                        logger.info("Console: delivery control", metadata: ["delivery": "\(id.prefix(64))", "control": "\(control.rawValue)"])
                        return ConsoleHTML.redirect(to: "/deliveries/\(ConsoleHTML.queryValue(id))?done=\(control.rawValue)")
                    }
                    problem = "the deliveries' admin API refused (\(answer.status)): \(answer.error ?? "no reason given")"
                }
                guard let report = try await report(id, for: session.principal) else {
                    return ConsoleHTML.html(.notFound, ConsolePages.notFound("No delivery \(id.prefix(64)).", csrf: session.csrfToken))
                }
                return ConsoleHTML.html(.conflict, ConsolePages.reportPage(report, csrf: session.csrfToken, message: .problem(problem ?? "")))
            }
        }
        router.get("/deliveries/:id/report") { request, context in
            let id = try context.parameters.require("id")
            guard case .signedIn(let session) = await visitor(request) else {
                return ConsoleHTML.html(.unauthorized, ConsolePages.signedOutFragment)
            }
            guard session.principal.has(.deliveriesRead) else { return ConsoleHTML.html(.forbidden, ConsolePages.noDeliveryFragment) }
            return try await guarded {
                guard let report = try await report(id, for: session.principal) else { return ConsoleHTML.html(.notFound, ConsolePages.noDeliveryFragment) }
                return ConsoleHTML.html(.ok, ConsolePages.reportSection(report))
            }
        }
        addCatalogRoutes(to: router)
        router.get("/segments") { request, _ in
            try await page(request, .catalogRead) { session in ConsoleHTML.html(.ok, try await segmentsPage(session)) }
        }
        router.get("/audit") { request, _ in
            try await page(request, .operators) { session in try await auditPage(request, csrf: session.csrfToken) }
        }
        // Support's actions on one subscription, through the registration admin API; back to
        // the same search with what was done, or the refusal above the results.
        router.post("/devices/action") { request, _ in
            try await withForm(request, .devicesWrite) { session, fields in
                let search = String((fields["q"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines).prefix(4096))
                let (appId, service, token) = (fields["appId"] ?? "", fields["service"] ?? "", fields["token"] ?? "")
                guard let action = fields["action"].flatMap(ConsolePages.DeviceAction.init(rawValue:)), !token.isEmpty else {
                    return ConsoleHTML.html(
                        .badRequest, ConsolePages.notFound("Unknown device action: lift, unsubscribe or resubscribe a device.", csrf: session.csrfToken))
                }
                let (answer, _) =
                    switch action {
                    case .lift:
                        await session.admin.catalog("POST", "/apps/\(ConsoleAdminClient.segment(appId))/quarantine/lift", body: ["registrationToken": token])
                    case .unsubscribe, .resubscribe:
                        await session.admin.catalog(
                            "POST", "/services/\(ConsoleAdminClient.segment(service))/\(action.rawValue)", body: ["registrationToken": token])
                    }
                if answer.accepted {
                    logger.info("Console: device action", metadata: ["action": "\(action.rawValue)", "service": "\(service.prefix(64))"])
                    return ConsoleHTML.redirect(to: "/devices?q=\(ConsoleHTML.queryValue(search))&done=\(action.rawValue)")
                }
                let problem = "The registration admin API refused (\(answer.status)): \(answer.error ?? "no reason given")"
                let results = search.isEmpty ? nil : try await devices(search: search, for: session.principal)
                return ConsoleHTML.html(
                    .conflict, ConsolePages.devices(search: search, results: results, csrf: session.csrfToken, message: .problem(problem)))
            }
        }
        router.get("/devices") { request, _ in
            try await page(request, .devicesRead) { session in
                let search = (request.uri.queryParameters.get("q") ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
                let results = search.isEmpty ? nil : try await devices(search: String(search.prefix(4096)), for: session.principal)
                let done = request.uri.queryParameters.get("done").flatMap(ConsolePages.DeviceAction.init(rawValue:))
                return ConsoleHTML.html(
                    .ok, ConsolePages.devices(search: search, results: results, csrf: session.csrfToken, message: done.map { .done($0) }))
            }
        }
    }

    /// The segments page: each segment of the services the operator may act on (the catalog
    /// admin API's list, latest versions), counted with the deliveries' preview when the
    /// operator may preview deliveries (a delivery to the segment, nothing sent).
    func segmentsPage(_ session: SignedIn) async throws -> String {
        let services = Set(try await catalog(for: session.principal).map(\.service)).sorted()
        let counting = session.principal.has(.deliveriesWrite)
        var rows: [ConsolePages.SegmentRow] = []
        var problems: [String] = []
        for service in services {
            let (answer, json) = await session.admin.catalog("GET", "/services/\(ConsoleAdminClient.segment(service))/segments")
            guard answer.accepted else {
                problems.append("The segments of \(service) could not be read (\(answer.status)): \(answer.error ?? "no reason given")")
                continue
            }
            for item in json["items"] as? [[String: Any]] ?? [] {
                guard let name = item["name"] as? String else { continue }
                let filter = (item["filter"]).flatMap { try? JSONSerialization.data(withJSONObject: $0, options: [.sortedKeys, .withoutEscapingSlashes]) }
                var row = ConsolePages.SegmentRow(
                    service: service, name: name, version: item["version"] as? Int ?? 0, description: item["description"] as? String ?? "",
                    filter: filter.map { String(decoding: $0, as: UTF8.self) } ?? "")
                if counting { try await count(&row, session) }
                rows.append(row)
            }
        }
        return ConsolePages.segments(rows, problems: problems, countsHidden: !counting && !rows.isEmpty, csrf: session.csrfToken)
    }

    /// How many devices a delivery to the segment would target now: the deliveries' preview of
    /// a request naming it (no sample, nothing sent).
    private func count(_ row: inout ConsolePages.SegmentRow, _ session: SignedIn) async throws {
        let document = try JSONSerialization.data(withJSONObject: [
            "type": "DeliveryRequested", "version": 1, "requestId": "console-segment-count-\(UUID().uuidString.lowercased())", "service": row.service,
            "audience": ["segment": ["name": row.name]], "content": ["title": "Segment count", "body": "Segment count"],
        ])
        let (answer, json) = await session.admin.submit(document, previewOnly: true)
        if answer.accepted {
            (row.devices, row.excluded) = (json["targeted"] as? Int, json["excluded"] as? Int)
        } else {
            row.countProblem = "not counted (\(answer.status))"
        }
    }

    /// The audit page: the filters from the query (times read as UTC), and the calls they match.
    func auditPage(_ request: Request, csrf: String) async throws -> Response {
        let query = request.uri.queryParameters
        func field(_ name: String) -> String { String((query.get(name) ?? "").trimmingCharacters(in: .whitespaces).prefix(64)) }
        let (name, service, permission, since, until) = (field("operator"), field("service"), field("permission"), field("since"), field("until"))
        var filter = ConsoleReports.AuditFilter(operatorName: name, service: service, permission: permission)
        var problem: String?
        func utc(_ text: String, box: String) -> Date? {
            guard !text.isEmpty else { return nil }
            guard let time = ConsoleComposer.localTime(text, in: .gmt) else {
                problem = problem ?? "\(box) must be a date and time (2026-11-30T09:00), not '\(text)'"
                return nil
            }
            return time
        }
        filter.since = utc(since, box: "From")
        filter.until = utc(until, box: "Until")
        let entries = problem == nil ? try await reports.audit(filter) : nil
        return ConsoleHTML.html(
            problem == nil ? .ok : .badRequest,
            ConsolePages.audit(
                operatorName: name, service: service, permission: permission, since: since, until: until, problem: problem, entries: entries,
                limit: filter.limit, csrf: csrf))
    }

    /// The services the compose page offers (those the operator may act on), and the sounds
    /// their apps declare.
    func composeCatalog(_ session: SignedIn) async throws -> ConsolePages.ComposeCatalog {
        ConsolePages.ComposeCatalog(try await catalog(for: session.principal))
    }

    /// The catalog's services that `principal` may act on.
    func catalog(for principal: AdminPrincipal) async throws -> [ConsoleReports.CatalogApp] {
        try await reports.catalog().filter { principal.mayActOn(service: $0.service) }
    }

    /// The devices a search finds, of the services `principal` may act on.
    func devices(search: String, for principal: AdminPrincipal) async throws -> [ConsoleReports.Device] {
        try await reports.devices(search: search).filter { principal.mayActOn(service: $0.service) }
    }

    /// A delivery's report; nil when there is none, or it is of a service `principal` may not
    /// act on (answered as not found: its existence is not the operator's to know).
    func report(_ id: String, for principal: AdminPrincipal) async throws -> ConsolePages.Report? {
        guard let funnel = try await reports.funnel(deliveryId: id), principal.mayActOn(service: funnel.serviceName) else { return nil }
        return ConsolePages.Report(
            funnel: funnel, failures: try await reports.failures(deliveryId: id), sendsPerMinute: try await reports.sendsPerMinute(deliveryId: id),
            trackingPerHour: try await reports.trackingPerHour(deliveryId: id), perApp: try await reports.perApp(deliveryId: id),
            perVariant: try await reports.perVariant(deliveryId: id), perLanguage: try await reports.perLanguage(deliveryId: id),
            refreshSeconds: settings.refreshSeconds, readAt: Date()
        )
    }

    // MARK: sessions

    static let forwardedFor = HTTPFields.Element.Name("X-Forwarded-For")!

    /// Who is signed in: the session, the operator it stands for (the bootstrap admin for an
    /// admin-token session), and the admin APIs called as that operator.
    package struct SignedIn: Sendable {
        package var session: ConsoleSessions.Session
        package var principal: AdminPrincipal
        package var admin: ConsoleAdminClient
        package var csrfToken: String { session.csrfToken }
    }

    enum Visitor {
        case signedIn(SignedIn)
        /// No session, a forged or expired cookie, or a session token the admin API refuses
        /// (signed out elsewhere, revoked, expired, the operator deactivated).
        case signedOut
        /// The registration's admin API did not say who the session is.
        case unknown(String)
    }

    /// The request's visitor. An operator's session is checked with the registration's admin
    /// API on every page (`GET /admin/v1/session`), so that a revocation or a deactivation
    /// holds from the next page, and its role and services are the current ones.
    func visitor(_ request: Request) async -> Visitor {
        guard let session = sessions.session(cookie: Self.cookie(request, ConsoleSessions.cookieName)) else { return .signedOut }
        guard let bearer = session.bearer else { return .signedIn(SignedIn(session: session, principal: .bootstrap, admin: admin)) }
        let client = admin.acting(as: bearer)
        let (answer, json) = await client.catalog("GET", "/session")
        if answer.status == 401 { return .signedOut }
        guard answer.accepted, let name = json["name"] as? String, let role = (json["role"] as? String).flatMap(AdminRole.init(rawValue:)) else {
            return .unknown(answer.error ?? "the registration admin API answered \(answer.status)")
        }
        let principal = AdminPrincipal(name: name, role: role, services: (json["services"] as? [String]).map(Set.init))
        return .signedIn(SignedIn(session: session, principal: principal, admin: client))
    }

    /// A sign-in from the client `address`: refused (429) without looking at the secret while
    /// the address is locked out after too many wrong ones (`SignInLimiter`). With an operator
    /// name, its password goes to the registration's admin API (`POST /admin/v1/sessions`),
    /// which locks that operator out after too many wrong ones; without, the secret is the
    /// admin token.
    func signIn(_ request: Request, from address: String) async throws -> Response {
        let fields = try await Self.form(request)
        let next = Self.safeNext(fields["next"])
        let operatorName = (fields["operator"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        func refuse(_ problem: String, status: HTTPResponse.Status = .unauthorized, headers: HTTPFields = [:]) -> Response {
            ConsoleHTML.html(
                status, ConsolePages.signIn(formToken: sessions.signInFormToken(), next: next, operatorName: operatorName, problem: problem), headers: headers)
        }
        if let seconds = signInLimiter.lockedFor(address) {
            logger.notice("Console sign-in refused: too many failed sign-ins from this address", metadata: ["client": "\(address)"])
            return refuse(
                "too many failed sign-ins from this address; try again in \((seconds + 59) / 60) minute\(seconds > 60 ? "s" : "")", status: .tooManyRequests,
                headers: [.retryAfter: String(seconds)])
        }
        guard sessions.acceptsSignInFormToken(fields["form"]) else {
            return refuse("the sign-in form expired or did not come from this console; try again")
        }
        // Pasted with a trailing newline or space, as a token file holds it: trimmed.
        let typed = (fields["token"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        if !operatorName.isEmpty {
            let (answer, json) = await admin.catalog(
                "POST", "/sessions", body: ["operator": operatorName, "password": fields["token"] ?? "", "minutes": settings.sessionMinutes])
            if answer.accepted, let bearer = json["token"] as? String,
                let expiresAt = (json["expiresAt"] as? String).flatMap({ try? Date($0, strategy: .iso8601) })
            {
                logger.info("Console sign-in", metadata: ["operator": "\(operatorName)"])
                signInLimiter.succeeded(address)
                return ConsoleHTML.redirect(
                    to: next, headers: [.setCookie: sessionCookie(sessions.issue(bearer: bearer, expiresAt: expiresAt), request: request)])
            }
            switch answer.status {
            case 429:
                logger.notice("Console sign-in refused: operator locked out", metadata: ["client": "\(address)"])
                return refuse(answer.error ?? "too many wrong passwords for this operator", status: .tooManyRequests)
            case 401, 400:
                logger.notice("Console sign-in refused: wrong operator name or password", metadata: ["client": "\(address)"])
                signInLimiter.failed(address)
                try await Task.sleep(for: .seconds(1))
                return refuse("wrong operator name or password")
            default:
                return refuse("the registration admin API could not sign you in (\(answer.status)): \(answer.error ?? "no reason given")", status: .badGateway)
            }
        }
        guard !typed.isEmpty, token.accepts(authorization: "Bearer \(typed)") else {
            logger.notice("Console sign-in refused: wrong admin token", metadata: ["client": "\(address)"])
            signInLimiter.failed(address)
            // Slows guessing down (each attempt costs the guesser a second).
            try await Task.sleep(for: .seconds(1))
            return refuse("wrong admin token")
        }
        logger.info("Console sign-in with the admin token")
        signInLimiter.succeeded(address)
        return ConsoleHTML.redirect(to: next, headers: [.setCookie: sessionCookie(sessions.issue(), request: request)])
    }

    /// A page for a signed-in visitor holding `permission`; anyone else is sent to the sign-in
    /// form (which comes back here once signed in), a visitor without it gets 403 naming it.
    func page(_ request: Request, _ permission: AdminPermission, _ body: (SignedIn) async throws -> Response) async throws -> Response {
        switch await visitor(request) {
        case .signedOut:
            let next = request.uri.path + (request.uri.query.map { "?\($0)" } ?? "")
            let cookie = Self.cookie(request, ConsoleSessions.cookieName)
            return Self.toSignIn(next: next, headers: cookie == nil ? [:] : [.setCookie: clearedCookie(request)])
        case .unknown(let reason):
            logger.error("Console: could not check a session", metadata: ["reason": "\(reason)"])
            return ConsoleHTML.html(.badGateway, ConsolePages.failure)
        case .signedIn(let session):
            guard session.principal.has(permission) else { return forbidden(session, permission) }
            return try await ConsoleTemplates.$viewer.withValue(session.principal) { try await guarded { try await body(session) } }
        }
    }

    /// 403: the operator's role does not hold `permission`.
    func forbidden(_ session: SignedIn, _ permission: AdminPermission) -> Response {
        let principal = session.principal
        logger.notice("Console page refused", metadata: ["operator": "\(principal.name)", "permission": "\(permission.rawValue)"])
        return ConsoleTemplates.$viewer.withValue(principal) {
            ConsoleHTML.html(
                .forbidden,
                ConsolePages.forbidden(
                    "Operator \(principal.name) (\(principal.role.rawValue)) does not have permission \(permission.rawValue).", csrf: session.csrfToken))
        }
    }

    /// A form post: a session holding `permission` and its CSRF token, or 403.
    func withForm(
        _ request: Request, _ permission: AdminPermission, _ body: (SignedIn, [String: String]) async throws -> Response
    ) async throws -> Response {
        try await withUpload(request, permission) { session, fields, _ in try await body(session, fields) }
    }

    /// A form post that may carry files (`multipart/form-data`): a session holding `permission`
    /// and its CSRF token, or 403.
    func withUpload(
        _ request: Request, _ permission: AdminPermission, _ body: (SignedIn, [String: String], [String: ConsoleMultipart.File]) async throws -> Response
    ) async throws -> Response {
        let session: SignedIn
        switch await visitor(request) {
        case .signedOut: return Self.toSignIn(next: "/deliveries")
        case .unknown(let reason):
            logger.error("Console: could not check a session", metadata: ["reason": "\(reason)"])
            return ConsoleHTML.html(.badGateway, ConsolePages.failure)
        case .signedIn(let signedIn): session = signedIn
        }
        let (fields, files) = try await Self.formParts(request)
        guard let csrf = fields["csrf"], ConsoleSessions.constantTimeEqual(csrf, session.csrfToken) else {
            logger.notice("Console form refused: missing or wrong CSRF token", metadata: ["path": "\(request.uri.path)"])
            return ConsoleHTML.html(
                .forbidden,
                ConsolePages.notFound(
                    "This form did not come from your session of the console (missing or wrong CSRF token). Reload the page and try again.",
                    csrf: session.csrfToken))
        }
        guard session.principal.has(permission) else { return forbidden(session, permission) }
        return try await ConsoleTemplates.$viewer.withValue(session.principal) { try await guarded { try await body(session, fields, files) } }
    }

    /// Runs `body`; a failure is logged and shown as a page saying so (no details: they may
    /// name the database).
    func guarded(_ body: () async throws -> Response) async throws -> Response {
        do {
            return try await body()
        } catch {
            logger.error("Console page failed", metadata: ["error": "\(String(reflecting: error))"])
            return ConsoleHTML.html(.internalServerError, ConsolePages.failure)
        }
    }

    func sessionCookie(_ value: String, request: Request) -> String {
        "\(ConsoleSessions.cookieName)=\(value); Path=/; Max-Age=\(settings.sessionMinutes * 60); HttpOnly; SameSite=Strict\(secure(request) ? "; Secure" : "")"
    }

    func clearedCookie(_ request: Request) -> String {
        "\(ConsoleSessions.cookieName)=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict\(secure(request) ? "; Secure" : "")"
    }

    /// Served over TLS: set so, or the TLS-terminating proxy says so.
    func secure(_ request: Request) -> Bool {
        settings.secureCookie || request.headers[HTTPFields.Element.Name("X-Forwarded-Proto")!]?.lowercased() == "https"
    }

    static func toSignIn(next: String, headers: HTTPFields = [:]) -> Response {
        ConsoleHTML.redirect(to: "/signin?next=\(ConsoleHTML.queryValue(safeNext(next)))", headers: headers)
    }

    /// Where sign-in sends the operator back: only a path of this console. Browsers remove tabs
    /// and newlines anywhere in a URL and read a backslash as a slash, so `/%09/evil.example`
    /// or `/\\evil.example` would leave the site: the path is checked as written and
    /// percent-decoded, and refused when either holds a control character, a backslash or starts
    /// with two slashes (`//host` is another site), or when the written form holds a space;
    /// anything refused goes to the deliveries page.
    package static func safeNext(_ next: String?) -> String {
        let fallback = "/deliveries"
        guard let next, next.utf8.count < 2048, let decoded = next.removingPercentEncoding else { return fallback }
        for (form, spaceAllowed) in [(next, false), (decoded, true)] {
            let unsafe = form.unicodeScalars.contains { scalar in
                scalar.value < 0x20 || scalar.value == 0x7F || scalar == "\\" || (scalar == " " && !spaceAllowed)
            }
            guard form.hasPrefix("/"), !form.hasPrefix("//"), !form.hasPrefix("/signin"), !unsafe else { return fallback }
        }
        return next
    }

    static func cookie(_ request: Request, _ name: String) -> String? {
        for header in request.headers[values: .cookie] {
            for pair in header.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == name {
                    return parts[1].trimmingCharacters(in: .whitespaces)
                }
            }
        }
        return nil
    }

    /// An `application/x-www-form-urlencoded` body (at most 64 KiB).
    static func form(_ request: Request) async throws -> [String: String] {
        try await formParts(request).0
    }

    /// A form's fields, and its files when it is `multipart/form-data` (at most 1 MiB; a
    /// credential file is a few KiB). A malformed multipart body has no field, so no CSRF token:
    /// it is refused as such.
    static func formParts(_ request: Request) async throws -> ([String: String], [String: ConsoleMultipart.File]) {
        if let boundary = request.headers[.contentType].flatMap(ConsoleMultipart.boundary(contentType:)) {
            let body = try await request.body.collect(upTo: 1024 * 1024)
            let parsed = ConsoleMultipart.parse(Data(buffer: body), boundary: boundary)
            return (parsed?.fields ?? [:], parsed?.files ?? [:])
        }
        let body = try await request.body.collect(upTo: 64 * 1024)
        return (decodeForm(String(buffer: body)), [:])
    }

    package static func decodeForm(_ text: String) -> [String: String] {
        var fields: [String: String] = [:]
        func decode(_ part: Substring) -> String { part.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? "" }
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            fields[decode(parts[0])] = parts.count > 1 ? decode(parts[1]) : ""
        }
        return fields
    }

    static func asset(_ text: String, type: String) -> Response {
        var headers = ConsoleHTML.securityHeaders
        headers[.contentType] = type
        headers[.cacheControl] = "max-age=300"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}
