import Foundation
import PushStore

/// The console's pages: each builds its template's values (ConsoleTemplates holds the HTML, and
/// escapes every value as it renders it). Figures carry `data-figure="<name>"` and tables their
/// column names, so the browser test reads exactly what a person reads.
package enum ConsolePages {
    typealias H = ConsoleHTML
    typealias T = ConsoleTemplates

    /// An optional text for a `{{#name}}…{{.}}…{{/name}}` section. `false`, not a missing key:
    /// a missing one would make Mustache look the name up in the enclosing contexts.
    static func optional(_ text: String?) -> Any { text ?? false }

    /// `<option>`s of a select (the `option` partial), the selected one marked.
    static func options(_ values: [String], selected: String, labels: [String: String] = [:]) -> [[String: Any]] {
        values.map { ["value": $0, "label": labels[$0] ?? $0, "selected": $0 == selected] }
    }

    // MARK: sign-in

    package static func signIn(formToken: String, next: String, operatorName: String = "", problem: String?) -> String {
        T.page("signin", title: "Sign in", csrf: nil, ["formToken": formToken, "next": next, "operatorName": operatorName, "problem": optional(problem)])
    }

    // MARK: deliveries

    package static func deliveries(_ rows: [ConsoleReports.DeliveryRow], includeProofs: Bool, csrf: String) -> String {
        let rows = rows.map { row -> [String: Any] in
            [
                "deliveryId": row.deliveryId, "link": "/deliveries/\(H.queryValue(row.deliveryId))", "proof": row.proof, "service": row.serviceName,
                "requestId": row.requestId, "state": row.state, "accepted": H.time(row.acceptedAt), "targeted": row.toDeliver.map(String.init) ?? "—",
                "sent": row.sent, "failed": row.failed, "opened": row.opens, "openRate": H.percent(row.openRate),
            ]
        }
        return T.page(
            "deliveries", title: "Deliveries", csrf: csrf, current: "/deliveries", ["rows": rows, "count": rows.count, "includeProofs": includeProofs])
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
        /// Empty for a delivery without language texts (the table is then left out).
        package var perLanguage: [ConsoleReports.LanguageFigures] = []
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
        let line: Any
        switch message {
        case .done(let control)?: line = ["role": "status", "kind": "done", "refused": false, "text": control.done]
        case .submitted(let proof)?:
            line = [
                "role": "status", "kind": "done", "refused": false,
                "text": "\(proof ? "Proof sent to its test recipients only." : "Sent: the delivery is accepted.") Its report follows it below.",
            ]
        case .problem(let text)?: line = ["role": "alert", "kind": "problem", "refused": true, "text": text]
        case nil: line = false
        }
        let pauseOrResume: [String: Any] =
            f.control == "paused"
            ? ["control": Control.resume.rawValue, "label": "Resume sending", "confirm": false]
            : ["control": Control.pause.rawValue, "label": "Pause sending", "confirm": false]
        let cancel: [String: Any] = ["control": Control.cancel.rawValue, "label": "Cancel the delivery", "confirm": true]
        return T.page(
            "report-page", title: "Delivery \(f.deliveryId)", csrf: csrf, current: "/deliveries",
            [
                "deliveryId": f.deliveryId, "message": line, "controls": f.control != "cancelled" && !f.isFinal,
                "controlAction": "/deliveries/\(H.queryValue(f.deliveryId))/control", "controlForms": [pauseOrResume, cancel],
                "report": reportContext(report),
            ])
    }

    /// The part that refreshes itself (`GET /deliveries/{id}/report` serves it alone).
    package static func reportSection(_ report: Report) -> String {
        T.render("report-section", reportContext(report))
    }

    static func reportContext(_ report: Report) -> [String: Any] {
        let f = report.funnel
        func figure(_ name: String, _ label: String, _ value: Int?, _ note: String = "") -> [String: Any] {
            ["name": name, "label": label, "value": value.map(String.init) ?? "—", "note": note.isEmpty ? false : note]
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
        ]
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
        let refresh =
            f.isFinal
            ? "Sending is over: every message has its outcome. Receptions and opens still arrive; refreshed every \(max(60, report.refreshSeconds * 6)) s."
            : "Still running: this report refreshes itself every \(report.refreshSeconds) s."
        return [
            "final": f.isFinal, "refreshSeconds": report.refreshSeconds, "source": "/deliveries/\(H.queryValue(f.deliveryId))/report",
            "service": f.serviceName, "requestId": f.requestId, "proof": f.proof, "accepted": H.time(f.acceptedAt), "planned": H.time(f.plannedAt),
            "operator": optional(f.control), "state": f.state, "refresh": refresh, "readAt": H.time(report.readAt), "figures": figures,
            "funnelChart": ConsoleCharts.funnel(id: "funnel-chart", title: "Funnel of delivery \(f.deliveryId)", bars: bars),
            "sendsChart": ConsoleCharts.series(
                id: "sends-chart", title: "Messages sent per minute (UTC)", seriesNames: ["Sent"],
                buckets: report.sendsPerMinute.map { (minuteLabel($0.start), $0.counts) }),
            "trackingChart": ConsoleCharts.series(
                id: "tracking-chart", title: "Receptions and opens per hour (UTC, first hit of each message)", seriesNames: ["Received", "Opened"],
                buckets: report.trackingPerHour.map { (hourLabel($0.start), $0.counts) }),
            "sends": report.sendsPerMinute.map { ["time": H.time($0.start), "sent": $0.counts[0]] as [String: Any] },
            "tracking": report.trackingPerHour.map { ["time": H.time($0.start), "received": $0.counts[0], "opened": $0.counts[1]] as [String: Any] },
            "failures": report.failures.map { ["type": $0.type, "reason": $0.reason, "platform": $0.platform, "messages": $0.messages] as [String: Any] },
            "apps": report.perApp.map {
                [
                    "app": $0.app, "platform": $0.platform, "environment": $0.environment, "messages": $0.messages, "sent": $0.sent, "failed": $0.failed,
                    "expired": $0.expired, "cancelled": $0.cancelled, "pending": $0.pending, "received": $0.received, "opened": $0.opened,
                ] as [String: Any]
            },
            "hasLanguages": !report.perLanguage.isEmpty,
            "languages": report.perLanguage.map {
                [
                    "language": $0.language.isEmpty ? "default texts" : $0.language, "code": $0.language, "messages": $0.messages, "sent": $0.sent,
                    "failed": $0.failed, "received": $0.received, "opened": $0.opened,
                    "openRate": $0.sent > 0 ? String(format: "%.1f %%", Double($0.opened) * 100 / Double($0.sent)) : "—",
                ] as [String: Any]
            },
            "hasVariants": !report.perVariant.isEmpty,
            "variants": report.perVariant.map {
                [
                    "variant": $0.variant, "messages": $0.messages, "sent": $0.sent, "failed": $0.failed, "received": $0.received, "opened": $0.opened,
                    "openRate": $0.openRate.map { String(format: "%.1f %%", $0 * 100) } ?? "—",
                ] as [String: Any]
            },
        ]
    }

    // MARK: compose

    /// What the compose page offers from the catalog: the services, and the sounds each
    /// service's apps declare per platform (the sound inputs suggest them; `default` always).
    package struct ComposeCatalog: Sendable {
        package var services: [String]
        /// By service, then platform (`ios`, `android`): name and label, by name.
        package var sounds: [String: [String: [(name: String, label: String)]]]

        package init(services: [String], sounds: [String: [String: [(name: String, label: String)]]] = [:]) {
            self.services = services
            self.sounds = sounds
        }

        /// From the catalog's rows: every service, and every sound its apps declare (a name two
        /// apps of one platform declare is offered once, with the first label).
        package init(_ catalog: [ConsoleReports.CatalogApp]) {
            var sounds: [String: [String: [String: String]]] = [:]
            for entry in catalog {
                guard let app = entry.app else { continue }
                let declared = (try? JSONSerialization.jsonObject(with: Data(app.sounds.utf8))) as? [[String: Any]] ?? []
                for sound in declared {
                    guard let name = sound["name"] as? String, !name.isEmpty else { continue }
                    if sounds[entry.service, default: [:]][app.platform, default: [:]][name] == nil {
                        sounds[entry.service, default: [:]][app.platform, default: [:]][name] = sound["label"] as? String ?? ""
                    }
                }
            }
            self.init(
                services: Array(Set(catalog.map(\.service))).sorted(),
                sounds: sounds.mapValues { $0.mapValues { $0.sorted { $0.key < $1.key }.map { (name: $0.key, label: $0.value) } } })
        }
    }

    /// The zones the time-zone input suggests (any IANA name is accepted).
    static let timeZones = TimeZone.knownTimeZoneIdentifiers.sorted()

    /// `problems`: the admin API's refusals, each also shown at the input it concerns
    /// (`ConsoleComposer.input(forProblem:)`).
    package static func compose(
        _ form: ConsoleComposer, catalog: ComposeCatalog, preview: [String: Any]?, problem: String?, csrf: String, problems: [String] = []
    ) -> String {
        let services = catalog.services
        let byInput = form.problemsByInput(problems)
        // One list of sounds per service and platform; the sound inputs point at the selected
        // service's (console.js follows the service select).
        let selected = services.firstIndex(of: form.service) ?? 0
        let soundLists: [[String: Any]] = services.enumerated().flatMap { index, service in
            ["ios", "android"].map { platform in
                [
                    "id": "sounds-\(platform)-\(index)", "service": service, "platform": platform,
                    "sounds": [["name": "default", "label": "the system's sound"]]
                        + (catalog.sounds[service]?[platform] ?? []).filter { $0.name != "default" }.map { ["name": $0.name, "label": $0.label] },
                ] as [String: Any]
            }
        }
        // A row's inputs read their refusals by suffix (`p.Value`): Mustache names cannot be
        // built from the row number.
        func rowProblems(_ prefix: String, _ row: Int, _ suffixes: [String]) -> [String: String] {
            Dictionary(uniqueKeysWithValues: suffixes.compactMap { suffix in byInput["\(prefix)\(row)\(suffix)"].map { (suffix, $0) } })
        }
        let fieldLabels = [
            "param": "parameter", "app": "app (integration key)", "platform": "platform", "osName": "OS name", "osVersion": "OS version",
            "osLanguage": "language", "userKey": "user key", "registeredAt": "registered", "updatedAt": "updated",
        ]
        let context: [String: Any] = [
            "problem": optional(problem), "p": byInput, "form": form, "services": options(services, selected: form.service),
            "audience": [
                "all": form.audience == "all", "userKeys": form.audience == "userKeys", "filter": form.audience == "filter",
                "segment": form.audience == "segment",
            ],
            "match": options(["all", "any"], selected: form.match, labels: ["all": "all of these conditions", "any": "any of these conditions"]),
            // The rows are numbered from 1 in their labels; the variant rows from 2 (the texts above are variant 1).
            "languages": form.languages.enumerated().map { row, language in
                [
                    "row": row, "number": row + 1, "tag": language.tag, "title": language.title, "body": language.body,
                    "p": rowProblems("lang", row, ["Tag", "Title", "Body"]),
                ] as [String: Any]
            },
            "variants": form.variants.enumerated().map { row, variant in
                [
                    "row": row, "number": row + 2, "name": variant.name, "share": variant.share, "title": variant.title, "body": variant.body,
                    "p": rowProblems("var", row, ["Name", "Share", "Title", "Body"]),
                ] as [String: Any]
            },
            "conditions": form.conditions.enumerated().map { row, condition in
                [
                    "row": row, "number": row + 1, "fields": options(ConsoleComposer.fields, selected: condition.field, labels: fieldLabels),
                    "param": condition.param, "operators": options([""] + ConsoleComposer.operators, selected: condition.op, labels: ["": "(none)"]),
                    "value": condition.value, "p": rowProblems("cond", row, ["Field", "Param", "Op", "Value"]),
                ] as [String: Any]
            },
            "priority": options(["bulk", "transactional"], selected: form.priority),
            "interruptionLevel": options([""] + ConsoleComposer.interruptionLevels, selected: form.iosInterruptionLevel, labels: ["": "(default)"]),
            "androidMode": options(["data", "notification"], selected: form.androidMode, labels: ["data": "data message", "notification": "notification"]),
            "preview": previewContext(preview, problem: nil, sendAt: form.sendAtSummary) ?? false,
            "soundLists": soundLists, "iosSoundList": "sounds-ios-\(selected)", "androidSoundList": "sounds-android-\(selected)",
            "timeZones": timeZones, "sendAtSummary": optional(form.sendAtSummary),
        ]
        return T.page("compose", title: "New delivery", csrf: csrf, current: "/deliveries", context)
    }

    /// The preview of a draft: the admin API's dry run (audience per app, one payload per
    /// platform with its size), or why the draft is not valid yet. The compose page shows it,
    /// and `POST /deliveries/preview` serves it alone for the live preview while one types.
    /// `sendAt`: the draft's send time as `ConsoleComposer.sendAtSummary` gives it.
    /// `fieldProblems`: the refusals that concern an input (`ConsoleComposer.fieldProblems`),
    /// listed with a link to it; console.js also marks the input itself.
    package static func previewContent(
        _ preview: [String: Any]?, problem: String?, sendAt: String? = nil, fieldProblems: [(input: String, text: String)] = []
    ) -> String {
        previewContext(preview, problem: problem, sendAt: sendAt, fieldProblems: fieldProblems).map { T.render("preview", $0) } ?? ""
    }

    static func previewContext(
        _ preview: [String: Any]?, problem: String?, sendAt: String?, fieldProblems: [(input: String, text: String)] = []
    ) -> [String: Any]? {
        if let problem {
            let items = fieldProblems.map { ["input": $0.input, "label": ConsoleComposer.label(ofInput: $0.input), "text": $0.text] }
            return ["previewProblem": problem, "dryRun": false, "fieldProblems": items.isEmpty ? false : ["items": items] as Any]
        }
        guard let preview else { return nil }
        let samples = (preview["samples"] as? [[String: Any]] ?? []).map { sample -> [String: Any] in
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
            return [
                "platform": sample["platform"] as? String ?? "", "variant": optional(sample["variant"] as? String),
                "language": optional(sample["language"] as? String), "bytes": sample["bytes"] as? Int ?? 0,
                "failure": optional(sample["failureReason"] as? String), "payload": payload,
            ]
        }
        // A count the admin API gave, even an empty one, is a table.
        let languageCounts: Any =
            (preview["languages"] as? [[String: Any]]).map { counts in
                [
                    "rows": counts.map { count in
                        [
                            "code": optional(count["language"] as? String), "language": count["language"] as? String ?? "",
                            "devices": count["devices"] as? Int ?? 0,
                        ] as [String: Any]
                    }
                ]
            } ?? false
        let variantCounts: Any =
            (preview["variants"] as? [[String: Any]]).map { counts in
                [
                    "rows": counts.map { count in
                        ["variant": count["variant"] as? String ?? "", "share": count["share"] as? Int ?? 0, "devices": count["devices"] as? Int ?? 0]
                            as [String: Any]
                    }
                ]
            } ?? false
        return [
            "previewProblem": false,
            "dryRun": [
                "targeted": preview["targeted"] as? Int ?? 0, "excluded": preview["excluded"] as? Int ?? 0,
                "apps": (preview["apps"] as? [[String: Any]] ?? []).map { app in
                    [
                        "platform": app["platform"] as? String ?? "", "integrationKey": app["integrationKey"] as? String ?? "",
                        "targeted": app["targeted"] as? Int ?? 0, "excluded": app["excluded"] as? Int ?? 0,
                    ] as [String: Any]
                },
                "languageCounts": languageCounts, "variantCounts": variantCounts, "samples": samples,
                "sendAt": optional(sendAt),
            ] as [String: Any],
        ]
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

    /// The `problem-line` partial's values, or false (no line).
    static func problemLine(_ problem: String?, id: String) -> Any {
        problem.map { ["problemId": id, "problemText": $0] } ?? false
    }

    package static func catalog(_ rows: [ConsoleReports.CatalogApp], csrf: String, done: String? = nil, problem: FormProblem? = nil) -> String {
        let services = Dictionary(grouping: rows, by: \.service).sorted(by: { $0.key < $1.key }).enumerated().map {
            offset, entry -> [String: Any] in
            let (service, entries) = entry
            let index = offset + 1
            let apps = entries.compactMap(\.app).map { app -> [String: Any] in
                let credential: Any =
                    app.credentialKind.map { kind in
                        [
                            "kind": kind, "fingerprint": app.credentialFingerprint ?? "", "set": H.time(app.credentialUpdatedAt),
                            "expires": optional(app.credentialExpiresAt),
                        ] as [String: Any]
                    } ?? false
                return [
                    "integrationKey": app.integrationKey, "appId": app.appId, "link": "/catalog/apps/\(H.queryValue(app.appId))", "label": app.label,
                    "platform": app.platform, "environment": app.environment,
                    "target": app.bundleId.map { "bundle \($0)" } ?? app.fcmProjectId.map { "FCM project \($0)" } ?? "—",
                    "credentialState": app.credentialKind == nil ? "none" : "set", "credential": credential, "variables": app.variables,
                    "sounds": app.sounds, "subscriptionParameters": app.subscriptionParameters,
                ]
            }
            let label = entries.first?.serviceLabel ?? service
            let relabel = problem?.form == "label:\(service)" ? problem : nil
            let cap = entries.first?.frequencyCap
            let capProblem = problem?.form == "cap:\(service)" ? problem : nil
            return [
                "index": index, "service": service, "serviceQuery": H.queryValue(service), "label": label, "apps": apps, "hasApps": !apps.isEmpty,
                "relabelProblem": problemLine(relabel?.text, id: "label-problem-\(index)"), "labelValue": relabel?.fields["label"] ?? label,
                "cap": cap.map { "at most \($0.messages) bulk \($0.messages == 1 ? "delivery" : "deliveries") per person in \($0.periodHours) h" } ?? "none",
                "hasCap": cap != nil, "capProblem": problemLine(capProblem?.text, id: "cap-problem-\(index)"),
                "capMessages": capProblem?.fields["messages"] ?? cap.map { "\($0.messages)" } ?? "",
                "capHours": capProblem?.fields["periodHours"] ?? cap.map { "\($0.periodHours)" } ?? "24",
            ]
        }
        let create = problem?.form == "new-service" ? problem : nil
        return T.page(
            "catalog", title: "Catalog", csrf: csrf, current: "/catalog",
            [
                "done": optional(done), "createProblem": problemLine(create?.text, id: "new-service-problem"),
                "createName": create?.fields["name"] ?? "", "createLabel": create?.fields["label"] ?? "", "services": services,
            ])
    }

    /// The `app-fields` partial's values (create and edit). `platform` is chosen when creating only.
    static func appFields(_ form: ConsoleAppForm, creating: Bool) -> [String: Any] {
        [
            "appForm": form, "creating": creating, "isIOS": form.platform == "ios", "isAndroid": form.platform == "android",
            "platformName": form.platform == "ios" ? "iOS (APNs)" : "Android (FCM)", "production": form.environment == "production",
            "sandbox": form.environment == "sandbox",
        ]
    }

    package static func newApp(service: String, form: ConsoleAppForm, problem: String?, csrf: String) -> String {
        T.page(
            "new-app", title: "New app of \(service)", csrf: csrf, current: "/catalog",
            [
                "service": service, "serviceQuery": H.queryValue(service), "settingsProblem": problemLine(problem, id: "app-problem"),
                "appFields": appFields(form, creating: true),
            ])
    }

    /// One app: its settings to edit, its integration key to copy, its credentials (kind,
    /// fingerprint, details; never the secret) and the upload form.
    package static func app(
        appId: String, service: String, form: ConsoleAppForm, credentials: [[String: Any]], csrf: String, done: String?, problem: String?,
        credentialProblem: String?, credentialFields: [String: String] = [:]
    ) -> String {
        let rows = credentials.enumerated().map { index, credential -> [String: Any] in
            let details = (credential["details"] as? [String: Any] ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
                .joined(separator: ", ")
            return [
                "kind": credential["kind"] as? String ?? "", "active": index == 0, "fingerprint": credential["fingerprint"] as? String ?? "",
                "details": details.isEmpty ? "—" : details, "createdAt": credential["createdAt"] as? String ?? "",
            ]
        }
        // After a refusal the key id and team id stay (they are not secret); the file and the
        // password never come back.
        return T.page(
            "app", title: "App \(form.label)", csrf: csrf, current: "/catalog",
            [
                "appLabel": form.label, "platform": form.platform, "service": service, "done": optional(done), "integrationKey": form.integrationKey,
                "credentials": rows, "credentialProblem": problemLine(credentialProblem, id: "credential-problem"), "appQuery": H.queryValue(appId),
                "ios": form.platform == "ios", "certificate": credentialFields["kind"] == "apns-certificate", "keyId": credentialFields["keyId"] ?? "",
                "teamId": credentialFields["teamId"] ?? "", "settingsProblem": problemLine(problem, id: "app-problem"),
                "appFields": appFields(form, creating: false),
            ])
    }

    // MARK: devices

    /// What a device action did, or why the admin API refused it: shown above the results.
    package enum DeviceMessage: Sendable, Equatable {
        case done(DeviceAction)
        case problem(String)
    }

    /// The support actions of the devices page, through the registration admin API.
    package enum DeviceAction: String, Sendable, CaseIterable {
        case lift, unsubscribe, resubscribe

        var done: String {
            switch self {
            case .lift: "Quarantine lifted: the next deliveries target the device again (a provider that still refuses its token quarantines it again)."
            case .unsubscribe: "Unsubscribed: the service's deliveries leave the device out until it is subscribed again (a new registration does not)."
            case .resubscribe: "Subscribed again: the next deliveries target the device."
            }
        }
    }

    package static func devices(search: String, results: [ConsoleReports.Device]?, csrf: String, message: DeviceMessage? = nil) -> String {
        let devices = (results ?? []).enumerated().map { index, device -> [String: Any] in
            [
                "index": index, "quarantined": device.disabled, "app": device.app, "platform": device.platform, "environment": device.environment,
                "service": device.service, "since": H.time(device.disabledAt), "reason": device.disabledReason ?? "unknown",
                "invalidSince": optional(device.invalidSince.map(H.time)), "userKey": device.userKey.isEmpty ? "none" : device.userKey,
                "token": device.token, "device": [device.deviceName, device.deviceModel].filter { !$0.isEmpty }.joined(separator: ", "),
                "system": system(osName: device.osName, osVersion: device.osVersion), "params": device.params,
                "registered": H.time(device.registeredAt), "appId": device.appId,
                "unsubscribed": optional(device.unsubscribedAt.map(H.time)),
                "notifications": device.notifications.isEmpty
                    ? false
                    : [
                        "rows": device.notifications.map { note in
                            [
                                "deliveryId": note.deliveryId, "deliveryPath": H.queryValue(note.deliveryId), "status": note.status,
                                "reason": optional(note.failureReason), "at": H.time(note.at), "received": note.received ? "yes" : "no",
                                "opened": note.opened ? "yes" : "no",
                            ] as [String: Any]
                        }
                    ] as Any,
            ]
        }
        let found: Any = results.flatMap { $0.isEmpty ? nil : "\($0.count) subscription\($0.count == 1 ? "" : "s")" } ?? false
        return T.page(
            "devices", title: "Devices", csrf: csrf, current: "/devices",
            [
                "search": search, "noneFound": results?.isEmpty == true, "found": found, "devices": devices,
                "done": message.flatMap { if case .done(let action) = $0 { action.done } else { nil } } ?? false,
                "problem": message.flatMap { if case .problem(let text) = $0 { text } else { nil } } ?? false,
            ])
    }

    // MARK: audit trail

    /// The audit page: its filters as typed (`problem`: a time that is not one), and the calls
    /// found (nil: the filters were refused).
    package static func audit(
        operatorName: String, service: String, permission: String, since: String, until: String, problem: String?,
        entries: [ConsoleReports.AuditEntry]?, limit: Int, csrf: String
    ) -> String {
        let rows = (entries ?? []).map { entry -> [String: Any] in
            [
                "at": H.time(entry.recordedAt), "operator": entry.operatorName, "role": entry.role, "method": entry.method, "path": entry.path,
                "permission": entry.permission, "status": entry.status, "refused": entry.status >= 400, "requestId": entry.requestId,
                "service": entry.service ?? "—",
            ]
        }
        let count = entries?.count ?? 0
        return T.page(
            "audit", title: "Audit trail", csrf: csrf, current: "/audit",
            [
                "operator": operatorName, "service": service, "since": since, "until": until, "problem": optional(problem),
                "permissions": options([""] + AdminPermission.allCases.map(\.rawValue), selected: permission, labels: ["": "(any)"]),
                "none": entries?.isEmpty == true, "table": rows.isEmpty ? false : ["rows": rows] as Any,
                "capped": count >= limit ? "\(limit)" as Any : false,
            ])
    }

    /// One segment's row of the segments page; `devices` and `excluded` nil when not counted.
    package struct SegmentRow: Sendable {
        package var service, name, description, filter: String
        package var version: Int
        package var devices, excluded: Int?
        /// Why it was not counted (the preview's refusal), shown in the count's place.
        package var countProblem: String?

        package init(
            service: String, name: String, version: Int, description: String, filter: String, devices: Int? = nil, excluded: Int? = nil,
            countProblem: String? = nil
        ) {
            (self.service, self.name, self.version, self.description, self.filter) = (service, name, version, description, filter)
            (self.devices, self.excluded, self.countProblem) = (devices, excluded, countProblem)
        }
    }

    package static func segments(_ rows: [SegmentRow], problems: [String], countsHidden: Bool, csrf: String) -> String {
        let items = rows.map { row -> [String: Any] in
            [
                "service": row.service, "name": row.name, "version": row.version, "description": row.description.isEmpty ? "—" : row.description,
                "filter": row.filter, "devices": row.devices.map { "\($0)" } ?? row.countProblem ?? "—", "excluded": row.excluded.map { "\($0)" } ?? "—",
            ]
        }
        return T.page(
            "segments", title: "Segments", csrf: csrf, current: "/segments",
            [
                "problems": problems, "countsHidden": countsHidden, "none": rows.isEmpty && problems.isEmpty,
                "table": items.isEmpty ? false : ["rows": items] as Any,
            ])
    }

    /// A device's system as one reads it: the SDKs send the name in the version too (`iOS`,
    /// `iOS 18.1`), which is then shown once; otherwise name and version (`Android 14`).
    package static func system(osName: String, osVersion: String) -> String {
        if !osName.isEmpty, osVersion.lowercased().hasPrefix(osName.lowercased()) { return osVersion }
        return [osName, osVersion].filter { !$0.isEmpty }.joined(separator: " ")
    }

    /// What the report's refreshing section answers without a session (console.js then reloads
    /// the page into the sign-in form) or for an unknown delivery.
    package static var signedOutFragment: String { T.render("signed-out-fragment", [:]) }
    package static var noDeliveryFragment: String { T.render("no-delivery-fragment", [:]) }

    /// A page that failed: no details (they may name the database).
    package static var failure: String { T.render("error", [:]) }

    package static func forbidden(_ what: String, csrf: String) -> String {
        T.page("forbidden", title: "Not allowed", csrf: csrf, ["what": what])
    }

    package static func notFound(_ what: String, csrf: String) -> String {
        T.page("not-found", title: "Not found", csrf: csrf, ["what": what])
    }
}
