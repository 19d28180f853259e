import Foundation

/// The console's pages as HTML (ConsoleHTML escapes every value). Figures carry
/// `data-figure="<name>"` and tables their column names, so the browser test reads exactly what
/// a person reads.
package enum ConsolePages {
    typealias H = ConsoleHTML

    // MARK: sign-in

    package static func signIn(formToken: String, next: String, problem: String?) -> String {
        let alert = problem.map { "<p class=\"problem\" role=\"alert\" id=\"signin-problem\"><strong>Not signed in:</strong> \(H.escape($0))</p>" } ?? ""
        let described = problem == nil ? "" : " aria-describedby=\"signin-problem\""
        return H.page(
            title: "Sign in", csrf: nil,
            body: """
                <h1>Sign in to the push console</h1>
                \(alert)
                <form method="post" action="/signin" class="signin">
                <input type="hidden" name="form" value="\(H.escape(formToken))">
                <input type="hidden" name="next" value="\(H.escape(next))">
                <p><label for="token">Admin token</label>
                <input id="token" name="token" type="password" autocomplete="current-password" required autofocus\(described)></p>
                <p class="hint">The token the operators set as <code>PUSH_ADMIN_TOKEN</code>.</p>
                <p><button type="submit">Sign in</button></p>
                </form>
                """)
    }

    // MARK: deliveries

    package static func deliveries(_ rows: [ConsoleReports.DeliveryRow], includeProofs: Bool, csrf: String) -> String {
        var table = ""
        for row in rows {
            let link = "/deliveries/\(H.queryValue(row.deliveryId))"
            table += """
                <tr data-delivery="\(H.escape(row.deliveryId))">
                <th scope="row"><a href="\(link)">\(H.escape(row.deliveryId))</a>\(row.proof ? " <span class=\"tag\">proof</span>" : "")</th>
                <td>\(H.escape(row.serviceName))</td><td>\(H.escape(row.requestId))</td><td>\(H.escape(row.state))</td>
                <td>\(H.time(row.acceptedAt))</td><td class="n">\(row.toDeliver.map(String.init) ?? "—")</td><td class="n">\(row.sent)</td>
                <td class="n">\(row.failed)</td><td class="n">\(row.opens)</td><td class="n">\(H.percent(row.openRate))</td>
                </tr>

                """
        }
        let empty = rows.isEmpty ? "<p>No delivery yet.</p>" : ""
        return H.page(
            title: "Deliveries", csrf: csrf, current: "/deliveries",
            body: """
                <h1>Deliveries</h1>
                <p><a href="/deliveries/new">New delivery</a></p>
                <form method="get" action="/deliveries" class="inline">
                <input type="checkbox" id="proofs" name="proofs" value="1"\(includeProofs ? " checked" : "")>
                <label for="proofs">Show proofs</label> <button type="submit">Apply</button>
                </form>
                \(empty)
                <table id="deliveries">
                <caption>The latest \(rows.count) deliveries, newest first\(includeProofs ? ", proofs included" : ", proofs left out")</caption>
                <thead><tr><th scope="col">Delivery</th><th scope="col">Service</th><th scope="col">Request</th><th scope="col">State</th>
                <th scope="col">Accepted</th><th scope="col">Targeted</th><th scope="col">Sent</th><th scope="col">Failed</th><th scope="col">Opened</th><th scope="col">Open rate</th></tr></thead>
                <tbody>
                \(table)</tbody>
                </table>
                """)
    }

    // MARK: the report of one delivery

    package struct Report: Sendable {
        package var funnel: ConsoleReports.Funnel
        package var failures: [ConsoleReports.Failure]
        package var sendsPerMinute: [ConsoleReports.Bucket]
        package var trackingPerHour: [ConsoleReports.Bucket]
        package var perApp: [ConsoleReports.AppFigures]
        /// Empty for a delivery without A/B variants (the table is then left out).
        package var perVariant: [ConsoleReports.VariantFigures] = []
        package var refreshSeconds: Int
        package var readAt: Date
    }

    /// What an operator can do to a running delivery.
    package enum Control: String, Sendable, CaseIterable {
        case pause, resume, cancel

        var done: String {
            switch self {
            case .pause: "Paused: nothing more is sent until you resume."
            case .resume: "Resumed: sending goes on."
            case .cancel: "Cancelled: nothing more of this delivery is sent."
            }
        }
    }

    /// A line above the report after a control: what was done, or why not.
    package enum Message: Sendable {
        case done(Control)
        case submitted(proof: Bool)
        case problem(String)
    }

    package static func reportPage(_ report: Report, csrf: String, message: Message? = nil) -> String {
        let f = report.funnel
        let action = "/deliveries/\(H.queryValue(f.deliveryId))/control"
        func form(_ control: Control, _ label: String, extra: String = "") -> String {
            """
            <form method="post" action="\(action)" class="inline">
            <input type="hidden" name="csrf" value="\(H.escape(csrf))"><input type="hidden" name="action" value="\(control.rawValue)">
            \(extra)<button type="submit">\(label)</button>
            </form>
            """
        }
        var controls = ""
        if f.control != "cancelled" && !f.isFinal {
            controls = """
                <section aria-labelledby="controls-heading" class="controls">
                <h2 id="controls-heading">Controls</h2>
                \(f.control == "paused" ? form(.resume, "Resume sending") : form(.pause, "Pause sending"))
                \(form(.cancel, "Cancel the delivery",
                    extra: "<input type=\"checkbox\" id=\"confirm-cancel\" name=\"confirm\" value=\"yes\" required> <label for=\"confirm-cancel\">Yes, cancel this delivery for good</label> "))
                </section>
                """
        }
        let line: String
        switch message {
        case .done(let control)?: line = "<p role=\"status\" class=\"done\" id=\"control-message\">\(control.done)</p>"
        case .submitted(let proof)?:
            line =
                "<p role=\"status\" class=\"done\" id=\"control-message\">\(proof ? "Proof sent to its test recipients only." : "Sent: the delivery is accepted.") Its report follows it below.</p>"
        case .problem(let text)?: line = "<p role=\"alert\" class=\"problem\" id=\"control-message\"><strong>Not done:</strong> \(H.escape(text))</p>"
        case nil: line = ""
        }
        return H.page(
            title: "Delivery \(f.deliveryId)", csrf: csrf, current: "/deliveries",
            body: """
                <p><a href="/deliveries">← All deliveries</a></p>
                <h1>Delivery \(H.escape(f.deliveryId))</h1>
                \(line)
                \(controls)
                \(reportSection(report))
                """)
    }

    /// The part that refreshes itself (`GET /deliveries/{id}/report` serves it alone).
    package static func reportSection(_ report: Report) -> String {
        let f = report.funnel
        let id = H.queryValue(f.deliveryId)
        func figure(_ name: String, _ label: String, _ value: Int?, _ note: String = "") -> String {
            "<div><dt>\(label)</dt><dd><span data-figure=\"\(name)\">\(value.map(String.init) ?? "—")</span>\(note.isEmpty ? "" : " <span class=\"note\">\(note)</span>")</dd></div>"
        }
        let sentShare = f.toDeliver.flatMap { $0 > 0 ? " (\(H.percent(Double(f.sent) / Double($0))) of targeted)" : nil } ?? ""
        let figures = [
            figure("targeted", "Targeted", f.toDeliver),
            figure("excluded", "Excluded", f.excluded, "quarantined devices left out"),
            figure("sent", "Sent", f.sent, sentShare),
            figure("failed", "Failed", f.failed),
            figure("failed_hard", "Failed, hard", f.failedHard),
            figure("failed_soft", "Failed, soft", f.failedSoft),
            figure("failed_ignored", "Failed, ignored", f.failedIgnored),
            figure("received", "Received", f.impressions, H.percent(f.impressionRate) + " of sent"),
            figure("opened", "Opened", f.opens, H.percent(f.openRate) + " of sent"),
            figure("expired", "Expired", f.expired),
            figure("cancelled", "Cancelled", f.cancelled),
            figure("pending", "Pending", f.pending),
        ].joined(separator: "\n")
        let bars: [ConsoleCharts.Bar] = [
            .init(label: "Targeted", value: f.toDeliver ?? 0, kind: "targeted"), .init(label: "Excluded", value: f.excluded ?? 0, kind: "excluded"),
            .init(label: "Sent", value: f.sent, kind: "sent"), .init(label: "Failed, hard", value: f.failedHard, kind: "failed"),
            .init(label: "Failed, soft", value: f.failedSoft, kind: "failed"), .init(label: "Failed, ignored", value: f.failedIgnored, kind: "failed"),
            .init(label: "Received", value: f.impressions, kind: "received"), .init(label: "Opened", value: f.opens, kind: "opened"),
            .init(label: "Expired", value: f.expired, kind: "expired"), .init(label: "Cancelled", value: f.cancelled, kind: "expired"),
            .init(label: "Pending", value: f.pending ?? 0, kind: "pending"),
        ]
        let minuteLabel: (Date) -> String = { String(H.time($0).dropFirst(11).prefix(5)) }
        let hourLabel: (Date) -> String = { String(H.time($0).dropFirst(5).prefix(11)) }
        let sends = ConsoleCharts.series(
            id: "sends-chart", title: "Messages sent per minute (UTC)", seriesNames: ["Sent"],
            buckets: report.sendsPerMinute.map { (minuteLabel($0.start), $0.counts) })
        let tracking = ConsoleCharts.series(
            id: "tracking-chart", title: "Receptions and opens per hour (UTC, first hit of each message)", seriesNames: ["Received", "Opened"],
            buckets: report.trackingPerHour.map { (hourLabel($0.start), $0.counts) })
        let sendRows = report.sendsPerMinute.map { "<tr><th scope=\"row\">\(H.time($0.start))</th><td class=\"n\">\($0.counts[0])</td></tr>" }
        let trackingRows = report.trackingPerHour.map {
            "<tr><th scope=\"row\">\(H.time($0.start))</th><td class=\"n\">\($0.counts[0])</td><td class=\"n\">\($0.counts[1])</td></tr>"
        }
        let failureRows = report.failures.map {
            "<tr><td>\(H.escape($0.type))</td><td>\(H.escape($0.reason))</td><td>\(H.escape($0.platform))</td><td class=\"n\">\($0.messages)</td></tr>"
        }
        let appRows = report.perApp.map {
            """
            <tr><th scope="row">\(H.escape($0.app))</th><td>\(H.escape($0.platform))</td><td>\(H.escape($0.environment))</td><td class="n">\($0.messages)</td>\
            <td class="n">\($0.sent)</td><td class="n">\($0.failed)</td><td class="n">\($0.expired)</td><td class="n">\($0.cancelled)</td>\
            <td class="n">\($0.pending)</td><td class="n">\($0.received)</td><td class="n">\($0.opened)</td></tr>
            """
        }
        let variantRows = report.perVariant.map {
            """
            <tr><th scope="row">\(H.escape($0.variant))</th><td class="n">\($0.messages)</td><td class="n">\($0.sent)</td><td class="n">\($0.failed)</td>\
            <td class="n">\($0.received)</td><td class="n">\($0.opened)</td>\
            <td class="n" data-variant-open-rate="\(H.escape($0.variant))">\($0.openRate.map { String(format: "%.1f %%", $0 * 100) } ?? "—")</td></tr>
            """
        }
        let variants =
            variantRows.isEmpty
            ? ""
            : """
            <h3>Per A/B variant</h3>
            <table id="variants"><caption>Messages of this delivery per A/B variant; the open rate is over sent</caption>
            <thead><tr><th scope="col">Variant</th><th scope="col">Messages</th><th scope="col">Sent</th><th scope="col">Failed</th>\
            <th scope="col">Received</th><th scope="col">Opened</th><th scope="col">Open rate</th></tr></thead>
            <tbody>\(variantRows.joined(separator: "\n"))</tbody></table>
            """
        func body(_ rows: [String], columns: Int, empty: String) -> String {
            rows.isEmpty ? "<tr><td colspan=\"\(columns)\">\(empty)</td></tr>" : rows.joined(separator: "\n")
        }
        let control = f.control.map { " · operator: \(H.escape($0))" } ?? ""
        let refresh =
            f.isFinal
            ? "Sending is over: every message has its outcome. Receptions and opens still arrive; refreshed every \(max(60, report.refreshSeconds * 6)) s."
            : "Still running: this report refreshes itself every \(report.refreshSeconds) s."
        return """
            <section id="report" aria-labelledby="report-heading" data-final="\(f.isFinal)" data-refresh="\(report.refreshSeconds)" data-source="/deliveries/\(id)/report">
            <h2 id="report-heading">Report</h2>
            <p class="meta">Service <strong>\(H.escape(f.serviceName))</strong> · request <code>\(H.escape(f.requestId))</code>\(f.proof ? " · proof" : "")
             · accepted \(H.time(f.acceptedAt)) · planned \(H.time(f.plannedAt))\(control)</p>
            <p class="state">State: <strong data-figure="state">\(H.escape(f.state))</strong>. <span aria-live="polite">\(refresh) Read at \(H.time(report.readAt)).</span></p>
            <h3>Funnel</h3>
            <dl class="figures" id="funnel">
            \(figures)
            </dl>
            \(ConsoleCharts.funnel(id: "funnel-chart", title: "Funnel of delivery \(f.deliveryId)", bars: bars))
            <h3>Sends over time</h3>
            \(sends)
            <details><summary>Sends per minute as a table</summary>
            <table id="sends"><caption>Messages sent per minute</caption><thead><tr><th scope="col">Minute</th><th scope="col">Sent</th></tr></thead>
            <tbody>\(body(sendRows, columns: 2, empty: "Nothing sent yet."))</tbody></table></details>
            <h3>Receptions and opens over time</h3>
            \(tracking)
            <details><summary>Receptions and opens per hour as a table</summary>
            <table id="tracking"><caption>First reception and first open of each message, per hour</caption>
            <thead><tr><th scope="col">Hour</th><th scope="col">Received</th><th scope="col">Opened</th></tr></thead>
            <tbody>\(body(trackingRows, columns: 3, empty: "No tracking hit yet."))</tbody></table></details>
            <h3>Failures by reason and platform</h3>
            <table id="failures"><caption>Failed messages by failure type, reason and platform</caption>
            <thead><tr><th scope="col">Type</th><th scope="col">Reason</th><th scope="col">Platform</th><th scope="col">Messages</th></tr></thead>
            <tbody>\(body(failureRows, columns: 4, empty: "No failure."))</tbody></table>
            <h3>Per app</h3>
            <table id="apps"><caption>Messages of this delivery per app</caption>
            <thead><tr><th scope="col">App</th><th scope="col">Platform</th><th scope="col">Environment</th><th scope="col">Messages</th><th scope="col">Sent</th>
            <th scope="col">Failed</th><th scope="col">Expired</th><th scope="col">Cancelled</th><th scope="col">Pending</th><th scope="col">Received</th><th scope="col">Opened</th></tr></thead>
            <tbody>\(body(appRows, columns: 11, empty: "No message planned yet."))</tbody></table>
            \(variants)
            </section>
            """
    }

    // MARK: compose

    package static func compose(
        _ form: ConsoleComposer, services: [String], preview: [String: Any]?, problem: String?, csrf: String
    ) -> String {
        let options = services.map { name in
            "<option value=\"\(H.escape(name))\"\(name == form.service ? " selected" : "")>\(H.escape(name))</option>"
        }.joined()
        let alert = problem.map { "<p role=\"alert\" class=\"problem\" id=\"compose-problem\"><strong>Not accepted:</strong> \(H.escape($0))</p>" } ?? ""
        let previewHTML = previewContent(preview, problem: nil)
        return H.page(
            title: "New delivery", csrf: csrf, current: "/deliveries",
            body: """
                <p><a href="/deliveries">← All deliveries</a></p>
                <h1>New delivery</h1>
                \(alert)
                <form method="post" action="/deliveries/new" class="compose" id="compose" data-preview="/deliveries/preview">
                <input type="hidden" name="csrf" value="\(H.escape(csrf))">
                <p><label for="service">Service</label> <select id="service" name="service" required>\(options)</select></p>
                <p><label for="title">Title</label><br><input id="title" name="title" type="text" value="\(H.escape(form.title))" maxlength="1000"></p>
                <p><label for="body">Message</label><br><textarea id="body" name="body" rows="3" cols="60" maxlength="4000">\(H.escape(form.body))</textarea></p>
                \(languageRows(form))
                \(variantRows(form))
                <fieldset><legend>Audience</legend>
                <input type="radio" id="audience-all" name="audience" value="all"\(form.audience == "all" ? " checked" : "")> <label for="audience-all">Every subscribed device of the service</label><br>
                <input type="radio" id="audience-keys" name="audience" value="userKeys"\(form.audience == "userKeys" ? " checked" : "")> <label for="audience-keys">These user keys</label><br>
                <label for="userKeys">User keys (one per line)</label><br><textarea id="userKeys" name="userKeys" rows="3" cols="40">\(H.escape(form.userKeys))</textarea><br>
                <input type="radio" id="audience-filter" name="audience" value="filter"\(form.audience == "filter" ? " checked" : "")> <label for="audience-filter">Devices matching</label>
                <select id="match" name="match" aria-label="Which conditions must hold">\(selectOptions(["all", "any"], selected: form.match, labels: ["all": "all of these conditions", "any": "any of these conditions"]))</select>
                \(conditionRows(form))
                <input type="radio" id="audience-segment" name="audience" value="segment"\(form.audience == "segment" ? " checked" : "")> <label for="audience-segment">Devices in the segment</label>
                <input id="segment" name="segment" type="text" size="24" maxlength="64" aria-label="Segment name" value="\(H.escape(form.segment))"> (its latest version; <code>pushctl segments list</code>)
                </fieldset>
                <p><label for="sendAt">Send at (UTC; empty: now)</label> <input id="sendAt" name="sendAt" type="datetime-local" value="\(H.escape(form.sendAt))"></p>
                \(composeOptions(form))
                <p><label for="proofUserKeys">Proof recipients: user keys (one per line, for "Send a proof")</label><br>
                <textarea id="proofUserKeys" name="proofUserKeys" rows="2" cols="40">\(H.escape(form.proofUserKeys))</textarea></p>
                <p><button type="submit" name="step" value="preview">Preview</button>
                <button type="submit" name="step" value="proof">Send a proof</button>
                <button type="submit" name="step" value="send">Send</button></p>
                </form>
                <div id="live-preview" aria-live="polite">\(previewHTML)</div>
                """)
    }

    /// The A/B test's rows (docs/console.md): the texts above as the first variant (a name and
    /// a share), then rows of a name, a share, a title and a message; a row without a name is
    /// left out, and without any there is no test.
    static func variantRows(_ form: ConsoleComposer) -> String {
        let rows = form.variants.enumerated().map { row, variant in
            """
            <tr><td><input id="var\(row)Name" name="var\(row)Name" type="text" size="10" maxlength="32" aria-label="Variant \(row + 2): name" value="\(H.escape(variant.name))"></td>\
            <td><input id="var\(row)Share" name="var\(row)Share" type="text" inputmode="numeric" size="4" maxlength="3" aria-label="Variant \(row + 2): share" value="\(H.escape(variant.share))"></td>\
            <td><input id="var\(row)Title" name="var\(row)Title" type="text" size="24" maxlength="1000" aria-label="Variant \(row + 2): title" value="\(H.escape(variant.title))"></td>\
            <td><input id="var\(row)Body" name="var\(row)Body" type="text" size="40" maxlength="4000" aria-label="Variant \(row + 2): message" value="\(H.escape(variant.body))"></td></tr>
            """
        }.joined()
        return """
            <fieldset><legend>A/B test</legend><p>Name a second variant to split the audience: the title, message and languages above are the first variant; each device gets one variant, the shares (per cent) adding up to 100.</p>\
            <table class="variants"><thead><tr><th>Variant</th><th>Share (%)</th><th>Title</th><th>Message</th></tr></thead><tbody>\
            <tr><td><input id="variantAName" name="variantAName" type="text" size="10" maxlength="32" placeholder="A" aria-label="Variant 1: name" value="\(H.escape(form.variantAName))"></td>\
            <td><input id="variantAShare" name="variantAShare" type="text" inputmode="numeric" size="4" maxlength="3" aria-label="Variant 1: share" value="\(H.escape(form.variantAShare))"></td>\
            <td colspan="2">the title, message and languages above</td></tr>\(rows)</tbody></table></fieldset>
            """
    }

    /// The language rows (docs/console.md): a tag, a title and a message each; a row without a
    /// tag is left out.
    static func languageRows(_ form: ConsoleComposer) -> String {
        let rows = form.languages.enumerated().map { row, language in
            """
            <tr><td><input id="lang\(row)Tag" name="lang\(row)Tag" type="text" size="8" maxlength="16" aria-label="Language \(row + 1): tag" value="\(H.escape(language.tag))"></td>\
            <td><input id="lang\(row)Title" name="lang\(row)Title" type="text" size="24" maxlength="1000" aria-label="Language \(row + 1): title" value="\(H.escape(language.title))"></td>\
            <td><input id="lang\(row)Body" name="lang\(row)Body" type="text" size="40" maxlength="4000" aria-label="Language \(row + 1): message" value="\(H.escape(language.body))"></td></tr>
            """
        }.joined()
        return """
            <fieldset><legend>Languages</legend><p>Texts per language (fr, pt-BR): a device gets the row of its language, the title and message above when none matches.</p>\
            <table class="languages"><thead><tr><th>Language</th><th>Title</th><th>Message</th></tr></thead><tbody>\(rows)</tbody></table></fieldset>
            """
    }

    /// Template, lane, rate, validity and the platforms' options (docs/console.md).
    static func composeOptions(_ form: ConsoleComposer) -> String {
        func input(_ id: String, _ label: String, _ value: String, type: String = "text", size: Int = 12, extra: String = "") -> String {
            "<label for=\"\(id)\">\(label)</label> <input id=\"\(id)\" name=\"\(id)\" type=\"\(type)\" size=\"\(size)\" value=\"\(H.escape(value))\"\(extra)>"
        }
        let priority = selectOptions(["bulk", "transactional"], selected: form.priority)
        let mode = selectOptions(["data", "notification"], selected: form.androidMode, labels: ["data": "data message", "notification": "notification"])
        return """
            <fieldset><legend>Options</legend>
            <p>\(input("template", "Template", form.template, size: 20, extra: " maxlength=\"64\"")) (its latest version; the texts above override it)</p>
            <p><label for="priority">Priority</label> <select id="priority" name="priority">\(priority)</select>
            \(input("throttle", "At most per second", form.throttle, type: "text", size: 8, extra: " inputmode=\"numeric\""))
            \(input("validHours", "Valid for (hours)", form.validHours, type: "text", size: 5, extra: " inputmode=\"numeric\""))</p>
            <p>iOS: \(input("iosBadge", "badge", form.iosBadge, size: 4, extra: " inputmode=\"numeric\"")) \(input("iosSound", "sound", form.iosSound)) \(input("iosCategory", "category", form.iosCategory))</p>
            <p>Android: <label for="androidMode">message</label> <select id="androidMode" name="androidMode">\(mode)</select>
            \(input("androidChannel", "channel", form.androidChannel)) \(input("androidImage", "image URL", form.androidImage, size: 30)) \(input("androidSound", "sound", form.androidSound))</p>
            </fieldset>
            """
    }

    /// `<option>`s of a select, the selected one marked.
    static func selectOptions(_ values: [String], selected: String, labels: [String: String] = [:]) -> String {
        values.map { value in
            "<option value=\"\(H.escape(value))\"\(value == selected ? " selected" : "")>\(H.escape(labels[value] ?? value))</option>"
        }.joined()
    }

    /// The condition builder's rows (docs/console.md): a field (a parameter by name, or a device
    /// field), an operator and a value; a row without an operator is left out.
    static func conditionRows(_ form: ConsoleComposer) -> String {
        let fieldLabels = [
            "param": "parameter", "app": "app (integration key)", "platform": "platform", "osName": "OS name", "osVersion": "OS version",
            "osLanguage": "language", "userKey": "user key", "registeredAt": "registered", "updatedAt": "updated",
        ]
        let rows = form.conditions.enumerated().map { row, condition in
            """
            <tr><td><select id="cond\(row)Field" name="cond\(row)Field" aria-label="Condition \(row + 1): field">\(selectOptions(ConsoleComposer.fields, selected: condition.field, labels: fieldLabels))</select></td>\
            <td><input id="cond\(row)Param" name="cond\(row)Param" type="text" size="12" maxlength="128" aria-label="Condition \(row + 1): parameter name" value="\(H.escape(condition.param))"></td>\
            <td><select id="cond\(row)Op" name="cond\(row)Op" aria-label="Condition \(row + 1): operator">\(selectOptions([""] + ConsoleComposer.operators, selected: condition.op, labels: ["": "(none)"]))</select></td>\
            <td><input id="cond\(row)Value" name="cond\(row)Value" type="text" size="24" maxlength="2000" aria-label="Condition \(row + 1): value" value="\(H.escape(condition.value))"></td></tr>
            """
        }.joined()
        return
            "<table class=\"conditions\"><thead><tr><th>Field</th><th>Parameter</th><th>Operator</th><th>Value (lists comma-separated; periods like 30 days)</th></tr></thead><tbody>\(rows)</tbody></table>"
    }

    /// The preview of a draft: the admin API's dry run (audience per app, one payload per
    /// platform with its size), or why the draft is not valid yet. The compose page shows it,
    /// and `POST /deliveries/preview` serves it alone for the live preview while one types.
    package static func previewContent(_ preview: [String: Any]?, problem: String?) -> String {
        if let problem {
            return
                "<section id=\"preview\" data-valid=\"false\" aria-labelledby=\"preview-heading\"><h2 id=\"preview-heading\">Preview</h2><p class=\"problem\" id=\"preview-problem\"><strong>Not valid yet:</strong> \(H.escape(problem))</p></section>"
        }
        guard let preview else { return "" }
        let targeted = preview["targeted"] as? Int ?? 0
        let excluded = preview["excluded"] as? Int ?? 0
        let apps = (preview["apps"] as? [[String: Any]] ?? []).map { app in
            "<tr><td>\(H.escape(app["platform"] as? String ?? ""))</td><td><code>\(H.escape(app["integrationKey"] as? String ?? ""))</code></td><td class=\"n\">\(app["targeted"] as? Int ?? 0)</td><td class=\"n\">\(app["excluded"] as? Int ?? 0)</td></tr>"
        }.joined()
        let samples = (preview["samples"] as? [[String: Any]] ?? []).map { sample in
            let failure = (sample["failureReason"] as? String).map { " <strong class=\"problem\">would fail: \(H.escape($0))</strong>" } ?? ""
            let payload: String
            if let text = sample["payload"] as? String {
                payload = text
            } else if let object = sample["payload"], JSONSerialization.isValidJSONObject(object),
                let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
            {
                payload = String(decoding: data, as: UTF8.self)
            } else {
                payload = ""
            }
            let language =
                ((sample["variant"] as? String).map { ", variant <code>\(H.escape($0))</code>" } ?? "")
                + ((sample["language"] as? String).map { ", language <code>\(H.escape($0))</code>" } ?? "")
            return """
                <div class="sample" data-platform="\(H.escape(sample["platform"] as? String ?? ""))"><h3>\(H.escape(sample["platform"] as? String ?? "")) payload\(language), <span data-figure="bytes">\(sample["bytes"] as? Int ?? 0)</span> bytes of 4096 (as the provider counts them)\(failure)</h3>
                <pre>\(H.escape(payload))</pre></div>
                """
        }.joined(separator: "\n")
        let languageCounts =
            (preview["languages"] as? [[String: Any]]).map { counts in
                let rows = counts.map { count in
                    let name = (count["language"] as? String).map { "<code>\(H.escape($0))</code>" } ?? "default texts"
                    return
                        "<tr><td>\(name)</td><td class=\"n\" data-language=\"\(H.escape(count["language"] as? String ?? ""))\">\(count["devices"] as? Int ?? 0)</td></tr>"
                }.joined()
                return
                    "<table id=\"preview-languages\"><caption>Devices per language</caption><thead><tr><th scope=\"col\">Texts</th><th scope=\"col\">Devices</th></tr></thead><tbody>\(rows)</tbody></table>"
            } ?? ""
        let variantCounts =
            (preview["variants"] as? [[String: Any]]).map { counts in
                let rows = counts.map { count in
                    let name = count["variant"] as? String ?? ""
                    return
                        "<tr><td><code>\(H.escape(name))</code></td><td class=\"n\">\(count["share"] as? Int ?? 0) %</td><td class=\"n\" data-variant=\"\(H.escape(name))\">\(count["devices"] as? Int ?? 0)</td></tr>"
                }.joined()
                return
                    "<table id=\"preview-variants\"><caption>Devices per A/B variant (about: each device's variant is drawn from its message id)</caption><thead><tr><th scope=\"col\">Variant</th><th scope=\"col\">Share</th><th scope=\"col\">Devices</th></tr></thead><tbody>\(rows)</tbody></table>"
            } ?? ""
        return """
            <section id="preview" data-valid="true" aria-labelledby="preview-heading">
            <h2 id="preview-heading">Preview (nothing sent)</h2>
            <p>Would target <strong data-figure="preview-targeted">\(targeted)</strong> devices and exclude <strong data-figure="preview-excluded">\(excluded)</strong> (quarantined or unsubscribed).</p>
            <table><caption>Audience per app</caption><thead><tr><th scope="col">Platform</th><th scope="col">Integration key</th><th scope="col">Targeted</th><th scope="col">Excluded</th></tr></thead>
            <tbody>\(apps)</tbody></table>
            \(languageCounts)
            \(variantCounts)
            \(samples)
            </section>
            """
    }

    // MARK: catalog

    /// A form's refusal, shown next to that form with what was typed kept.
    package struct FormProblem: Sendable {
        /// Which form: `new-service`, or `label:<service name>`.
        package var form: String
        package var text: String
        package var fields: [String: String]
        package init(form: String, text: String, fields: [String: String]) {
            self.form = form
            self.text = text
            self.fields = fields
        }
    }

    static func problemLine(_ problem: String?, id: String) -> String {
        problem.map { "<p role=\"alert\" class=\"problem\" id=\"\(id)\"><strong>Not saved:</strong> \(H.escape($0))</p>" } ?? ""
    }

    static func doneLine(_ done: String?) -> String {
        done.map { "<p role=\"status\" class=\"done\" id=\"form-message\">\(H.escape($0))</p>" } ?? ""
    }

    static func csrfField(_ csrf: String) -> String { "<input type=\"hidden\" name=\"csrf\" value=\"\(H.escape(csrf))\">" }

    package static func catalog(_ rows: [ConsoleReports.CatalogApp], csrf: String, done: String? = nil, problem: FormProblem? = nil) -> String {
        var sections = ""
        var index = 0
        for (service, entries) in Dictionary(grouping: rows, by: \.service).sorted(by: { $0.key < $1.key }) {
            index += 1
            var apps = ""
            for app in entries.compactMap(\.app) {
                let target = app.bundleId.map { "bundle \(H.escape($0))" } ?? app.fcmProjectId.map { "FCM project \(H.escape($0))" } ?? "—"
                let credential =
                    app.credentialKind.map { kind in
                        "\(H.escape(kind)), <code>\(H.escape(app.credentialFingerprint ?? ""))</code>, set \(H.time(app.credentialUpdatedAt))"
                            + (app.credentialExpiresAt.map { ", expires \(H.escape($0))" } ?? "")
                    } ?? "none yet"
                apps += """
                    <tr data-integration-key="\(H.escape(app.integrationKey))" data-app-id="\(H.escape(app.appId))">
                    <th scope="row"><a href="/catalog/apps/\(H.queryValue(app.appId))" aria-label="Edit \(H.escape(app.label)) (\(H.escape(app.platform)))">\(H.escape(app.label))</a></th><td>\(H.escape(app.platform))</td><td>\(H.escape(app.environment))</td><td>\(target)</td>
                    <td><code>\(H.escape(app.integrationKey))</code> <button type="button" data-copy="\(H.escape(app.integrationKey))" aria-label="Copy the integration key of \(H.escape(app.label)) (\(H.escape(app.platform)))">Copy</button></td>
                    <td data-credential="\(app.credentialKind == nil ? "none" : "set")">\(credential)</td>
                    <td><code>\(H.escape(app.variables))</code></td><td><code>\(H.escape(app.sounds))</code></td><td><code>\(H.escape(app.subscriptionParameters))</code></td>
                    </tr>

                    """
            }
            let label = entries.first?.serviceLabel ?? service
            let relabel = problem?.form == "label:\(service)" ? problem : nil
            sections += """
                <section aria-labelledby="service-\(index)" data-service="\(H.escape(service))" id="service-\(H.escape(service))">
                <h2 id="service-\(index)">\(H.escape(label)) <span class="note">(\(H.escape(service)))</span></h2>
                \(apps.isEmpty ? "<p>No app yet.</p>" : """
                    <table class="apps"><caption>Apps of \(H.escape(service)) (the app's name opens its settings and credentials)</caption>
                    <thead><tr><th scope="col">App</th><th scope="col">Platform</th><th scope="col">Environment</th><th scope="col">Bundle or project</th>
                    <th scope="col">Integration key (the SDK's mobileAppUuid)</th><th scope="col">Credentials (kind, fingerprint)</th><th scope="col">Variables</th>
                    <th scope="col">Sounds</th><th scope="col">Subscription parameters</th></tr></thead>
                    <tbody>\(apps)</tbody></table>
                    """)
                <p><a href="/catalog/services/\(H.queryValue(service))/apps/new">Add an app to \(H.escape(service))</a></p>
                \(problemLine(relabel?.text, id: "label-problem-\(index)"))
                <form method="post" action="/catalog/services/\(H.queryValue(service))/label" class="inline">\(csrfField(csrf))
                <label for="label-\(index)">Label of \(H.escape(service))</label>
                <input id="label-\(index)" name="label" type="text" required maxlength="200" value="\(H.escape(relabel?.fields["label"] ?? label))"\(relabel == nil ? "" : " aria-describedby=\"label-problem-\(index)\"")>
                <button type="submit">Rename</button></form>
                </section>

                """
        }
        let create = problem?.form == "new-service" ? problem : nil
        return H.page(
            title: "Catalog", csrf: csrf, current: "/catalog",
            body: """
                <h1>Services and apps</h1>
                \(doneLine(done))
                <p class="hint">Every change goes through the registration service's admin API (docs/admin-api.md), which records it as an event.
                Credentials show by kind and fingerprint, never their content.</p>
                <section aria-labelledby="new-service-heading" class="form">
                <h2 id="new-service-heading">New service</h2>
                \(problemLine(create?.text, id: "new-service-problem"))
                <form method="post" action="/catalog/services" id="new-service">\(csrfField(csrf))
                <p><label for="service-name">Service name</label> <input id="service-name" name="name" type="text" required maxlength="64" value="\(H.escape(create?.fields["name"] ?? ""))" aria-describedby="service-name-hint"> <span class="hint" id="service-name-hint">letters, digits, _ . - (it cannot change)</span></p>
                <p><label for="service-label">Service label</label> <input id="service-label" name="label" type="text" required maxlength="200" value="\(H.escape(create?.fields["label"] ?? ""))"></p>
                <p><button type="submit">Create the service</button></p>
                </form>
                </section>
                \(sections.isEmpty ? "<p>No service yet.</p>" : sections)
                """)
    }

    /// The fields of an app (create and edit). `platform` is chosen when creating only.
    static func appFields(_ form: ConsoleAppForm, creating: Bool) -> String {
        let platform =
            creating
            ? """
            <fieldset><legend>Platform</legend>
            <input type="radio" id="platform-ios" name="platform" value="ios"\(form.platform == "ios" ? " checked" : "")> <label for="platform-ios">iOS (APNs)</label>
            <input type="radio" id="platform-android" name="platform" value="android"\(form.platform == "android" ? " checked" : "")> <label for="platform-android">Android (FCM)</label>
            </fieldset>
            """
            : "<input type=\"hidden\" name=\"platform\" value=\"\(H.escape(form.platform))\"><p>Platform: <strong>\(form.platform == "ios" ? "iOS (APNs)" : "Android (FCM)")</strong> (it cannot change)</p>"
        let key =
            creating
            ? "<p><label for=\"app-key\">Integration key</label> <input id=\"app-key\" name=\"integrationKey\" type=\"text\" maxlength=\"128\" value=\"\(H.escape(form.integrationKey))\" aria-describedby=\"app-key-hint\"> <span class=\"hint\" id=\"app-key-hint\">leave empty for a new one (a UUID); an existing app's key when moving it here</span></p>"
            : ""
        return """
            \(platform)
            <p><label for="app-label">Label</label> <input id="app-label" name="label" type="text" required maxlength="200" value="\(H.escape(form.label))"></p>
            <p><label for="app-environment">APNs environment (iOS)</label> <select id="app-environment" name="environment">
            <option value="production"\(form.environment == "production" ? " selected" : "")>production</option>
            <option value="sandbox"\(form.environment == "sandbox" ? " selected" : "")>sandbox (development builds)</option></select></p>
            <p><label for="app-bundle">Bundle id (iOS: the APNs topic)</label> <input id="app-bundle" name="bundleId" type="text" maxlength="200" value="\(H.escape(form.bundleId))"></p>
            <p><label for="app-project">FCM project id (Android)</label> <input id="app-project" name="fcmProjectId" type="text" maxlength="200" value="\(H.escape(form.fcmProjectId))"></p>
            \(key)
            <p><label for="app-variables">Application variables (one name per line)</label><br><textarea id="app-variables" name="variables" rows="3" cols="40">\(H.escape(form.variables))</textarea></p>
            <p><label for="app-sounds">Sounds the iOS app ships (one per line, name: label)</label><br><textarea id="app-sounds" name="sounds" rows="3" cols="40">\(H.escape(form.sounds))</textarea></p>
            <p><label for="app-params">Subscription parameters (one per line, name: type among string, integer, decimal, boolean, date)</label><br><textarea id="app-params" name="subscriptionParameters" rows="3" cols="40">\(H.escape(form.subscriptionParameters))</textarea></p>
            """
    }

    package static func newApp(service: String, form: ConsoleAppForm, problem: String?, csrf: String) -> String {
        H.page(
            title: "New app of \(service)", csrf: csrf, current: "/catalog",
            body: """
                <p><a href="/catalog">← Catalog</a></p>
                <h1>New app of \(H.escape(service))</h1>
                \(problemLine(problem, id: "app-problem"))
                <form method="post" action="/catalog/services/\(H.queryValue(service))/apps/new" id="app-form">\(csrfField(csrf))
                \(appFields(form, creating: true))
                <p><button type="submit">Create the app</button></p>
                </form>
                """)
    }

    /// One app: its settings to edit, its integration key to copy, its credentials (kind,
    /// fingerprint, details; never the secret) and the upload form.
    package static func app(
        appId: String, service: String, form: ConsoleAppForm, credentials: [[String: Any]], csrf: String, done: String?, problem: String?,
        credentialProblem: String?, credentialFields: [String: String] = [:]
    ) -> String {
        // After a refusal the key id and team id stay (they are not secret); the file and the
        // password never come back.
        let keyId = H.escape(credentialFields["keyId"] ?? "")
        let teamId = H.escape(credentialFields["teamId"] ?? "")
        let certificate = credentialFields["kind"] == "apns-certificate"
        let described = credentialProblem == nil ? "" : " aria-describedby=\"credential-problem\""
        let rows = credentials.enumerated().map { (index, credential) in
            let details = (credential["details"] as? [String: Any] ?? [:]).sorted { $0.key < $1.key }.map { "\(H.escape($0.key)) \(H.escape("\($0.value)"))" }
                .joined(separator: ", ")
            return """
                <tr data-kind="\(H.escape(credential["kind"] as? String ?? ""))"><td>\(H.escape(credential["kind"] as? String ?? ""))\(index == 0 ? " <span class=\"tag\">active</span>" : "")</td>
                <td><code data-figure="fingerprint">\(H.escape(credential["fingerprint"] as? String ?? ""))</code></td><td>\(details.isEmpty ? "—" : details)</td>
                <td>\(H.escape(credential["createdAt"] as? String ?? ""))</td></tr>
                """
        }.joined(separator: "\n")
        let kinds =
            form.platform == "ios"
            ? """
            <fieldset><legend>Kind</legend>
            <input type="radio" id="kind-token" name="kind" value="apns-token"\(certificate ? "" : " checked")> <label for="kind-token">APNs key (.p8, with its key id and team id)</label><br>
            <input type="radio" id="kind-certificate" name="kind" value="apns-certificate"\(certificate ? " checked" : "")> <label for="kind-certificate">APNs certificate (.p12, with its password)</label>
            </fieldset>
            <p><label for="key-id">Key id</label> <input id="key-id" name="keyId" type="text" maxlength="10" autocomplete="off" value="\(keyId)"></p>
            <p><label for="team-id">Team id</label> <input id="team-id" name="teamId" type="text" maxlength="10" autocomplete="off" value="\(teamId)"></p>
            <p><label for="credential-file">Key or certificate file (.p8 or .p12)</label> <input id="credential-file" name="file" type="file" accept=".p8,.p12,.pfx" required\(described)></p>
            <p><label for="p12-password">Certificate password (.p12 only)</label> <input id="p12-password" name="password" type="password" autocomplete="off"></p>
            """
            : """
            <input type="hidden" name="kind" value="fcm-service-account">
            <p><label for="credential-file">Service account file (.json, from the Firebase console)</label> <input id="credential-file" name="file" type="file" accept=".json,application/json" required\(described)></p>
            """
        return H.page(
            title: "App \(form.label)", csrf: csrf, current: "/catalog",
            body: """
                <p><a href="/catalog">← Catalog</a></p>
                <h1>\(H.escape(form.label)) <span class="note">(\(H.escape(form.platform)), service \(H.escape(service)))</span></h1>
                \(doneLine(done))
                <p>Integration key (the SDK's <code>mobileAppUuid</code>): <code id="integration-key">\(H.escape(form.integrationKey))</code>
                <button type="button" data-copy="\(H.escape(form.integrationKey))" aria-label="Copy the integration key">Copy</button></p>
                <section aria-labelledby="credentials-heading" id="credentials">
                <h2 id="credentials-heading">Provider credentials</h2>
                <table id="credential-list"><caption>Stored credentials, newest (the active one) first: kind and fingerprint, never the secret</caption>
                <thead><tr><th scope="col">Kind</th><th scope="col">Fingerprint</th><th scope="col">Details</th><th scope="col">Set at</th></tr></thead>
                <tbody>\(rows.isEmpty ? "<tr><td colspan=\"4\">None yet: the senders cannot reach this app's devices.</td></tr>" : rows)</tbody></table>
                \(problemLine(credentialProblem, id: "credential-problem"))
                <form method="post" action="/catalog/apps/\(H.queryValue(appId))/credentials" enctype="multipart/form-data" id="credential-form">\(csrfField(csrf))
                \(kinds)
                <p><button type="submit">Upload the credentials</button></p>
                </form>
                </section>
                <section aria-labelledby="settings-heading">
                <h2 id="settings-heading">Settings</h2>
                \(problemLine(problem, id: "app-problem"))
                <form method="post" action="/catalog/apps/\(H.queryValue(appId))" id="app-form">\(csrfField(csrf))
                \(appFields(form, creating: false))
                <p><button type="submit">Save the settings</button></p>
                </form>
                </section>
                """)
    }

    // MARK: devices

    package static func devices(search: String, results: [ConsoleReports.Device]?, csrf: String) -> String {
        var found = ""
        if let results {
            if results.isEmpty {
                found = "<p role=\"status\">No subscription has the user key or registration token “\(H.escape(search))”.</p>"
            } else {
                found = "<p role=\"status\">\(results.count) subscription\(results.count == 1 ? "" : "s") found.</p>\n"
                for (index, device) in results.enumerated() {
                    let quarantine =
                        device.disabled
                        ? "<strong>Quarantined</strong> since \(H.time(device.disabledAt)), reason <span data-figure=\"reason\">\(H.escape(device.disabledReason ?? "unknown"))</span>"
                            + (device.invalidSince.map { "; the provider says invalid since \(H.time($0))" } ?? "")
                        : "Active (not quarantined)"
                    found += """
                        <section class="device" aria-labelledby="device-\(index)" data-quarantined="\(device.disabled)">
                        <h2 id="device-\(index)">\(H.escape(device.app)) (\(H.escape(device.platform)), \(H.escape(device.environment))) · service \(H.escape(device.service))</h2>
                        <dl class="pairs">
                        <div><dt>Quarantine</dt><dd data-figure="quarantine">\(quarantine)</dd></div>
                        <div><dt>User key</dt><dd>\(device.userKey.isEmpty ? "none" : H.escape(device.userKey))</dd></div>
                        <div><dt>Registration token</dt><dd><code class="token">\(H.escape(device.token))</code></dd></div>
                        <div><dt>Device</dt><dd>\(H.escape([device.deviceName, device.deviceModel].filter { !$0.isEmpty }.joined(separator: ", ")))</dd></div>
                        <div><dt>System</dt><dd>\(H.escape([device.osName, device.osVersion].filter { !$0.isEmpty }.joined(separator: " ")))</dd></div>
                        <div><dt>Subscription parameters</dt><dd><code>\(H.escape(device.params))</code></dd></div>
                        <div><dt>Registered</dt><dd>\(H.time(device.registeredAt))</dd></div>
                        </dl>
                        </section>

                        """
                }
            }
        }
        return H.page(
            title: "Devices", csrf: csrf, current: "/devices",
            body: """
                <h1>Devices</h1>
                <form method="get" action="/devices" role="search">
                <p><label for="q">User key or registration token</label>
                <input id="q" name="q" type="search" value="\(H.escape(search))" required maxlength="4096">
                <button type="submit">Search</button></p>
                </form>
                \(found)
                """)
    }

    package static func notFound(_ what: String, csrf: String) -> String {
        H.page(title: "Not found", csrf: csrf, body: "<h1>Not found</h1><p>\(H.escape(what))</p><p><a href=\"/deliveries\">All deliveries</a></p>")
    }
}
