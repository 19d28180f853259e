import Foundation
import Hummingbird

/// The catalog's pages and forms. Every change goes through the registration service's admin
/// API (docs/admin-api.md), so it is an event on `push.catalog` like any other; its refusal is
/// shown next to the form that caused it, with what was typed kept (never a credential's file).
extension ConsoleEndpoints {
    /// What a `done=` query says after a change.
    static let catalogDone: [String: String] = [
        "service": "Service created.", "label": "Label saved.", "app": "App created: upload its provider credentials below.",
        "saved": "Settings saved.", "credentials": "Credentials stored and active: shown by kind and fingerprint only.",
        "cap": "Frequency cap set.", "capLifted": "Frequency cap lifted.",
    ]

    func addCatalogRoutes<Context: RequestContext>(to router: Router<Context>) {
        router.get("/catalog") { request, _ in
            try await page(request, .catalogRead) { session in
                let done = request.uri.queryParameters.get("done").flatMap { Self.catalogDone[String($0)] }
                return ConsoleHTML.html(.ok, ConsolePages.catalog(try await catalog(for: session.principal), csrf: session.csrfToken, done: done))
            }
        }
        router.post("/catalog/services") { request, _ in
            try await withForm(request, .catalogWrite) { session, fields in
                let name = (fields["name"] ?? "").trimmingCharacters(in: .whitespaces)
                let label = (fields["label"] ?? "").trimmingCharacters(in: .whitespaces)
                let (answer, _) = await session.admin.catalog("POST", "/services", body: ["name": name, "label": label])
                if answer.accepted {
                    logger.info("Console: service created", metadata: ["service": "\(name)"])
                    return ConsoleHTML.redirect(to: "/catalog?done=service#service-\(ConsoleHTML.queryValue(name))")
                }
                return try await catalogRefusal(session, form: "new-service", answer: answer, fields: fields)
            }
        }
        router.post("/catalog/services/:name/label") { request, context in
            let name = try context.parameters.require("name")
            return try await withForm(request, .catalogWrite) { session, fields in
                let label = (fields["label"] ?? "").trimmingCharacters(in: .whitespaces)
                let (answer, _) = await session.admin.catalog("PUT", "/services/\(ConsoleAdminClient.segment(name))", body: ["label": label])
                if answer.accepted { return ConsoleHTML.redirect(to: "/catalog?done=label#service-\(ConsoleHTML.queryValue(name))") }
                return try await catalogRefusal(session, form: "label:\(name)", answer: answer, fields: fields)
            }
        }
        // A service's frequency cap: set (`action=set`, `messages`, `periodHours`) or lifted
        // (`action=lift`) through `PUT`/`DELETE /admin/v1/services/{name}/frequency-cap`.
        router.post("/catalog/services/:name/frequency-cap") { request, context in
            let name = try context.parameters.require("name")
            return try await withForm(request, .contentWrite) { session, fields in
                let path = "/services/\(ConsoleAdminClient.segment(name))/frequency-cap"
                let answer: ConsoleAdminClient.Answer
                switch fields["action"] {
                case "lift":
                    answer = await session.admin.catalog("DELETE", path).0
                case "set":
                    let (messages, hours) = (Int(fields["messages"] ?? ""), Int(fields["periodHours"] ?? ""))
                    guard let messages, let hours else {
                        answer = ConsoleAdminClient.Answer(status: 400, error: "the cap needs a whole number of deliveries and of hours")
                        break
                    }
                    answer = await session.admin.catalog("PUT", path, body: ["messages": messages, "periodHours": hours]).0
                default:
                    answer = ConsoleAdminClient.Answer(status: 400, error: "choose to set the cap or to lift it")
                }
                if answer.accepted {
                    let done = fields["action"] == "lift" ? "capLifted" : "cap"
                    logger.info("Console: frequency cap changed", metadata: ["service": "\(name)", "action": "\(fields["action"] ?? "")"])
                    return ConsoleHTML.redirect(to: "/catalog?done=\(done)#service-\(ConsoleHTML.queryValue(name))")
                }
                return try await catalogRefusal(session, form: "cap:\(name)", answer: answer, fields: fields)
            }
        }
        router.get("/catalog/services/:name/apps/new") { request, context in
            let name = try context.parameters.require("name")
            return try await page(request, .catalogWrite) { session in
                ConsoleHTML.html(.ok, ConsolePages.newApp(service: name, form: ConsoleAppForm(), problem: nil, csrf: session.csrfToken))
            }
        }
        router.post("/catalog/services/:name/apps/new") { request, context in
            let name = try context.parameters.require("name")
            return try await withForm(request, .catalogWrite) { session, fields in
                let form = ConsoleAppForm(fields: fields)
                func refuse(_ text: String) -> Response {
                    ConsoleHTML.html(.unprocessableContent, ConsolePages.newApp(service: name, form: form, problem: text, csrf: session.csrfToken))
                }
                let body: [String: Any]
                do { body = try form.body() } catch let problem as ConsoleFormProblem { return refuse(problem.text) }
                let (answer, json) = await session.admin.catalog("POST", "/services/\(ConsoleAdminClient.segment(name))/apps", body: body)
                guard answer.accepted, let appId = (json["appId"] as? String)?.lowercased() else { return refuse(Self.refusal(answer, of: "the catalog")) }
                logger.info("Console: app created", metadata: ["service": "\(name)", "app": "\(appId)"])
                return ConsoleHTML.redirect(to: "/catalog/apps/\(ConsoleHTML.queryValue(appId))?done=app")
            }
        }
        router.get("/catalog/apps/:id") { request, context in
            let id = try context.parameters.require("id")
            return try await page(request, .catalogRead) { session in
                let done = request.uri.queryParameters.get("done").flatMap { Self.catalogDone[String($0)] }
                return try await appPage(id, session: session, done: done)
            }
        }
        router.post("/catalog/apps/:id") { request, context in
            let id = try context.parameters.require("id")
            return try await withForm(request, .catalogWrite) { session, fields in
                let form = ConsoleAppForm(fields: fields)
                var problem: String
                do {
                    let (answer, _) = await session.admin.catalog("PUT", "/apps/\(ConsoleAdminClient.segment(id))", body: try form.body())
                    if answer.accepted {
                        logger.info("Console: app settings saved", metadata: ["app": "\(id.prefix(64))"])
                        return ConsoleHTML.redirect(to: "/catalog/apps/\(ConsoleHTML.queryValue(id))?done=saved")
                    }
                    problem = Self.refusal(answer, of: "the catalog")
                } catch let refused as ConsoleFormProblem {
                    problem = refused.text
                }
                return try await appPage(id, session: session, edited: form, problem: problem)
            }
        }
        router.post("/catalog/apps/:id/credentials") { request, context in
            let id = try context.parameters.require("id")
            return try await withUpload(request, .credentialsWrite) { session, fields, files in
                var problem: String
                do {
                    let body = try ConsoleCredentialForm.body(fields: fields, file: files["file"])
                    let (answer, _) = await session.admin.catalog("PUT", "/apps/\(ConsoleAdminClient.segment(id))/credentials", body: body)
                    if answer.accepted {
                        logger.info("Console: credentials stored", metadata: ["app": "\(id.prefix(64))", "kind": "\(body["kind"] ?? "")"])
                        return ConsoleHTML.redirect(to: "/catalog/apps/\(ConsoleHTML.queryValue(id))?done=credentials")
                    }
                    // The admin API names the field without echoing it (docs/admin-api.md).
                    let file = files["file"].map { " (file “\($0.filename.prefix(200))”)" } ?? ""
                    problem = Self.refusal(answer, of: "the credentials") + file
                } catch let refused as ConsoleFormProblem {
                    problem = refused.text
                }
                logger.notice("Console: credentials refused", metadata: ["app": "\(id.prefix(64))"])
                return try await appPage(id, session: session, credentialProblem: problem, credentialFields: fields)
            }
        }
    }

    /// The admin API's refusal, in a sentence.
    static func refusal(_ answer: ConsoleAdminClient.Answer, of what: String) -> String {
        answer.status == 502
            ? (answer.error ?? "the admin API did not answer")
            : "the registration service refused \(what) (\(answer.status)): \(answer.error ?? "no reason given")"
    }

    func catalogRefusal(_ session: SignedIn, form: String, answer: ConsoleAdminClient.Answer, fields: [String: String]) async throws
        -> Response
    {
        let problem = ConsolePages.FormProblem(form: form, text: Self.refusal(answer, of: "it"), fields: fields)
        return ConsoleHTML.html(
            .unprocessableContent, ConsolePages.catalog(try await catalog(for: session.principal), csrf: session.csrfToken, problem: problem))
    }

    /// An app's page, read through the admin API (`GET /admin/v1/apps/{id}` and its credentials).
    func appPage(
        _ id: String, session: SignedIn, done: String? = nil, edited: ConsoleAppForm? = nil, problem: String? = nil,
        credentialProblem: String? = nil, credentialFields: [String: String] = [:]
    ) async throws -> Response {
        let (answer, app) = await session.admin.catalog("GET", "/apps/\(ConsoleAdminClient.segment(id))")
        guard answer.accepted else {
            // The admin API's 403: an app of a service the operator may not act on.
            if answer.status == 403 {
                return ConsoleHTML.html(.forbidden, ConsolePages.forbidden(answer.error ?? "Not allowed.", csrf: session.csrfToken))
            }
            let text = answer.status == 404 || answer.status == 400 ? "No app \(id.prefix(64))." : Self.refusal(answer, of: "to show the app")
            return ConsoleHTML.html(
                answer.status == 404 || answer.status == 400 ? .notFound : .badGateway, ConsolePages.notFound(text, csrf: session.csrfToken))
        }
        let (_, listed) = await session.admin.catalog("GET", "/apps/\(ConsoleAdminClient.segment(id))/credentials")
        let credentials = listed["items"] as? [[String: Any]] ?? listed["credentials"] as? [[String: Any]] ?? []
        let failed = problem != nil || credentialProblem != nil
        return ConsoleHTML.html(
            failed ? .unprocessableContent : .ok,
            ConsolePages.app(
                appId: id, service: app["serviceName"] as? String ?? "", form: edited ?? ConsoleAppForm(app: app), credentials: credentials,
                csrf: session.csrfToken, done: done, problem: problem, credentialProblem: credentialProblem,
                credentialFields: credentialFields))
    }
}
