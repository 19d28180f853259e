import Foundation
import PushConsole
import Testing

@Suite("The console's compose form and delivery states")
struct ConsoleComposerTests {
    func object(_ data: Data) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test("the form becomes a contract v1 request: every device, or the user keys typed one per line or comma-separated")
    func document() throws {
        var form = ConsoleComposer(fields: ["service": "trips", "title": "Hi", "body": "Hello {{userKey}}", "audience": "all"])
        var request = try object(try form.document(requestId: "console-1", proof: false))
        #expect(request["type"] as? String == "DeliveryRequested")
        #expect(request["version"] as? Int == 1)
        #expect(request["requestId"] as? String == "console-1")
        #expect(request["service"] as? String == "trips")
        #expect((request["audience"] as? [String: Any])?["all"] as? Bool == true)
        #expect((request["content"] as? [String: String]) == ["title": "Hi", "body": "Hello {{userKey}}"])
        #expect(request["proof"] == nil)

        form = ConsoleComposer(fields: [
            "service": "trips", "body": "x", "audience": "userKeys", "userKeys": "alice\r\n bob ,carol\n\n", "proofUserKeys": "qa1",
        ])
        request = try object(try form.document(requestId: "console-2", proof: true))
        #expect((request["audience"] as? [String: Any])?["userKeys"] as? [String] == ["alice", "bob", "carol"])
        #expect((request["proof"] as? [String: Any])?["userKeys"] as? [String] == ["qa1"])
    }

    @Test("a named variant row makes an A/B test: the texts above (and their languages) become the first variant, each named row another")
    func variants() throws {
        let form = ConsoleComposer(fields: [
            "service": "s", "title": "Hi", "body": "Hello", "lang0Tag": "fr", "lang0Body": "Bonjour", "variantAName": "", "variantAShare": "60",
            "var0Name": " B ", "var0Share": "40", "var0Title": "", "var0Body": "Hey {{userKey}}", "var1Name": "", "var1Body": "ignored",
        ])
        let content = try #require(try object(try form.document(requestId: "r", proof: false))["content"] as? [String: Any])
        #expect(content.keys.sorted() == ["variants"], "the texts move into the variants")
        let variants = try #require(content["variants"] as? [[String: Any]])
        #expect(variants.count == 2)
        #expect(variants[0]["name"] as? String == "A", "the first variant is A unless named")
        #expect(variants[0]["share"] as? Int == 60)
        #expect(variants[0]["title"] as? String == "Hi")
        #expect(variants[0]["body"] as? String == "Hello")
        #expect(variants[0]["languages"] as? [String: [String: String]] == ["fr": ["body": "Bonjour"]])
        #expect(variants[1].keys.sorted() == ["body", "name", "share"])
        #expect(variants[1]["name"] as? String == "B")
        #expect(variants[1]["share"] as? Int == 40)

        let plain = try object(try ConsoleComposer(fields: ["service": "s", "body": "b", "var1Body": "no name"]).document(requestId: "r", proof: false))
        #expect((plain["content"] as? [String: Any])?.keys.sorted() == ["body"], "without a named row there is no test")
        let page = ConsolePages.compose(form, catalog: .init(services: ["s"]), preview: nil, problem: nil, csrf: "c")
        #expect(page.contains(#"aria-label="Variant 2: name" value="B""#))
        #expect(page.contains(#"aria-label="Variant 1: share" value="60""#))
    }

    @Test("a send time typed in the datetime-local input becomes the contract's UTC sendAt; empty sends now")
    func sendAt() throws {
        var form = ConsoleComposer(fields: ["service": "s", "body": "b", "sendAt": "2026-11-27T09:30"])
        #expect(try object(try form.document(requestId: "r", proof: false))["sendAt"] as? String == "2026-11-27T09:30:00Z")
        form.sendAt = "2026-11-27T09:30:15"
        #expect(try object(try form.document(requestId: "r", proof: false))["sendAt"] as? String == "2026-11-27T09:30:15Z")
        form.sendAt = ""
        #expect(try object(try form.document(requestId: "r", proof: false))["sendAt"] == nil)
        #expect(form.sendAtSummary == nil)
    }

    @Test("a send time is read in the operator's time zone and shown beside its UTC time; an unknown zone is refused at its input")
    func sendAtInZone() throws {
        // Summer time in Paris: UTC+2.
        var form = ConsoleComposer(fields: ["service": "s", "body": "b", "sendAt": "2026-07-01T09:30", "timeZone": " Europe/Paris ", "validHours": "2"])
        var request = try object(try form.document(requestId: "r", proof: false))
        #expect(request["sendAt"] as? String == "2026-07-01T07:30:00Z")
        #expect(request["validUntil"] as? String == "2026-07-01T09:30:00Z", "validity counts from the send time in UTC")
        #expect(form.sendAtSummary == "2026-07-01 07:30 UTC (09:30 Europe/Paris)")
        // Winter, across midnight: UTC+1, the day shown when it differs.
        form.sendAt = "2026-12-01T00:30"
        #expect(try object(try form.document(requestId: "r", proof: false))["sendAt"] as? String == "2026-11-30T23:30:00Z")
        #expect(form.sendAtSummary == "2026-11-30 23:30 UTC (2026-12-01 00:30 Europe/Paris)")
        form.timeZone = "America/New_York"
        form.sendAt = "2026-11-27T09:30:15"
        #expect(try object(try form.document(requestId: "r", proof: false))["sendAt"] as? String == "2026-11-27T14:30:15Z")
        // UTC, named or left empty, shows one time.
        for zone in ["", "UTC"] {
            form.timeZone = zone
            #expect(try object(try form.document(requestId: "r", proof: false))["sendAt"] as? String == "2026-11-27T09:30:15Z")
            #expect(form.sendAtSummary == "2026-11-27 09:30 UTC")
        }
        // Not a local time: sent as typed, for the planner to refuse by name; no summary.
        form.sendAt = "tomorrow"
        #expect(try object(try form.document(requestId: "r", proof: false))["sendAt"] as? String == "tomorrowZ")
        #expect(form.sendAtSummary == nil)

        form = ConsoleComposer(fields: ["service": "s", "body": "b", "sendAt": "2026-07-01T09:30", "timeZone": "Mars/Olympus_Mons"])
        #expect(form.sendAtSummary == nil)
        do {
            _ = try form.document(requestId: "r", proof: false)
            Issue.record("an unknown zone was accepted")
        } catch let problem as ConsoleComposer.ComposerProblem {
            #expect(problem.description.hasPrefix("timeZone 'Mars/Olympus_Mons' is not a time zone"), "\(problem)")
            #expect(form.input(forProblem: problem.description) == "timeZone")
            let page = ConsolePages.compose(
                form, catalog: .init(services: ["s"]), preview: nil, problem: problem.description, csrf: "c", problems: [problem.description])
            #expect(page.contains(#"<strong class="field-problem" id="timeZone-problem">timeZone &#39;Mars/Olympus_Mons&#39; is not a time zone"#))
        }

        let page = ConsolePages.compose(
            ConsoleComposer(fields: ["service": "s", "body": "b", "sendAt": "2026-07-01T09:30", "timeZone": "Asia/Tokyo"]), catalog: .init(services: ["s"]),
            preview: ["targeted": 3, "excluded": 0], problem: nil, csrf: "c")
        #expect(page.contains(#"<span id="sendAt-utc">= 2026-07-01 00:30 UTC (09:30 Asia/Tokyo)</span>"#))
        #expect(page.contains(#"<strong id="preview-send-at">2026-07-01 00:30 UTC (09:30 Asia/Tokyo)</strong>"#))
        #expect(page.contains(#"<option value="Europe/Paris"></option>"#), "the zone input suggests the IANA names")
    }

    @Test("a refusal of a language row is shown at that row's input, live in the preview's list and after a Preview")
    func languageRowProblems() throws {
        let form = ConsoleComposer(fields: [
            "service": "s", "body": "b", "lang0Tag": "fr", "lang0Title": "Salut", "lang1Tag": "de", "lang1Title": "Hallo", "lang2Tag": "FR",
        ])
        #expect(
            form.input(forProblem: "content.languages.de.body is required (a language's texts replace the default title, subtitle and body together)")
                == "lang1Body")
        #expect(form.input(forProblem: "content.languages.fr.title is longer than 4096 bytes") == "lang0Title")
        #expect(form.input(forProblem: "content.variants[0].languages.de.body is required") == "lang1Body", "the texts above are variant 0")
        #expect(form.input(forProblem: "content.languages: 'fr' and 'FR' are the same language") == "lang2Tag", "the row quoted last, as written")
        #expect(form.input(forProblem: "content.languages: 'de' is not a language tag of the form language[-Script][-REGION]") == "lang1Tag")
        #expect(form.input(forProblem: "content.languages must have 1 to 50 languages (has 51)") == nil)
        #expect(form.input(forProblem: "content.languages.it.body is required") == nil, "no row has that tag")

        #expect(ConsoleComposer.label(ofInput: "lang1Body") == "Language 2: message")
        #expect(ConsoleComposer.label(ofInput: "var0Share") == "Variant 2: share")
        #expect(ConsoleComposer.label(ofInput: "cond3Op") == "Condition 4: operator")
        #expect(ConsoleComposer.label(ofInput: "androidColor") == "Android colour")

        let problems = [
            "content.languages.de.body is required", "content.android.color must be #rrggbb <b>", "the service is unknown",
        ]
        let fieldProblems = form.fieldProblems(problems)
        #expect(fieldProblems.map(\.input) == ["lang1Body", "androidColor"], "only the refusals that concern an input")
        let preview = ConsolePages.previewContent(nil, problem: "refused (400)", fieldProblems: fieldProblems)
        #expect(
            preview.contains(
                ##"<ul id="preview-field-problems"><li data-input="lang1Body"><a href="#lang1Body">Language 2: message</a>: <span class="problem-text">content.languages.de.body is required</span></li><li data-input="androidColor"><a href="#androidColor">Android colour</a>: <span class="problem-text">content.android.color must be #rrggbb &lt;b&gt;</span></li></ul>"##
            ), "\(preview)")
        #expect(!ConsolePages.previewContent(nil, problem: "refused (400)").contains("preview-field-problems"), "no list without field problems")

        let page = ConsolePages.compose(form, catalog: .init(services: ["s"]), preview: nil, problem: "refused (400)", csrf: "c", problems: problems)
        #expect(page.contains(#"aria-label="Language 2: message" value="" aria-invalid="true" aria-describedby="lang1Body-problem">"#))
        #expect(page.contains(#"<strong class="field-problem" id="lang1Body-problem">content.languages.de.body is required</strong>"#))
    }

    @Test("the sound inputs suggest the sounds the selected service's apps declare, per platform, default first, each name once")
    func declaredSounds() throws {
        func app(_ service: String, _ platform: String, _ sounds: String) -> ConsoleReports.CatalogApp {
            ConsoleReports.CatalogApp(
                service: service, serviceLabel: service,
                app: .init(
                    appId: UUID().uuidString, label: "\(service) \(platform)", platform: platform, environment: "production", integrationKey: "k",
                    bundleId: nil, fcmProjectId: nil, variables: "[]", sounds: sounds, subscriptionParameters: "[]", credentialKind: nil,
                    credentialFingerprint: nil, credentialUpdatedAt: nil, credentialExpiresAt: nil))
        }
        let catalog = ConsolePages.ComposeCatalog([
            app("news", "ios", #"[{"name":"ping.caf","label":"Ping"}]"#),
            app("trips", "ios", #"[{"name":"chime.caf","label":"Chime"},{"name":"bell.caf","label":"Bell"}]"#),
            app("trips", "ios", #"[{"name":"chime.caf","label":"Chime again"}]"#),
            app("trips", "android", #"[{"name":"horn","label":"Horn <loud>"}]"#),
            ConsoleReports.CatalogApp(service: "empty", serviceLabel: "Empty", app: nil),
        ])
        #expect(catalog.services == ["empty", "news", "trips"])
        #expect(catalog.sounds["trips"]?["ios"]?.map(\.name) == ["bell.caf", "chime.caf"])
        #expect(catalog.sounds["trips"]?["ios"]?.last?.label == "Chime")

        let page = ConsolePages.compose(ConsoleComposer(fields: ["service": "trips"]), catalog: catalog, preview: nil, problem: nil, csrf: "c")
        #expect(page.contains(#"id="iosSound" name="iosSound" type="text" size="12" list="sounds-ios-2" data-sounds="ios""#), "the selected service's list")
        #expect(page.contains(#"id="androidSound" name="androidSound" type="text" size="12" list="sounds-android-2" data-sounds="android""#))
        #expect(
            page.contains(
                #"<datalist id="sounds-ios-2" data-service="trips" data-platform="ios"><option value="default">the system&#39;s sound</option><option value="bell.caf">Bell</option><option value="chime.caf">Chime</option></datalist>"#
            ))
        #expect(page.contains(#"<option value="horn">Horn &lt;loud&gt;</option>"#), "labels are escaped")
        #expect(
            page.contains(
                #"<datalist id="sounds-ios-1" data-service="news" data-platform="ios"><option value="default">the system&#39;s sound</option><option value="ping.caf">Ping</option></datalist>"#
            ))
        #expect(
            page.contains(
                #"<datalist id="sounds-android-0" data-service="empty" data-platform="android"><option value="default">the system&#39;s sound</option></datalist>"#
            ))
    }

    @Test("languages, template, lane, rate, validity and the platforms' options become the request's fields; empty ones are left out")
    func options() throws {
        let form = ConsoleComposer(fields: [
            "service": "s", "title": "", "body": "Hello", "lang0Tag": " fr ", "lang0Title": "Salut", "lang0Body": "Bonjour", "lang1Tag": "",
            "lang1Body": "ignored", "lang2Tag": "pt-BR", "lang2Body": "Olá", "template": " welcome ", "priority": "transactional", "throttle": "50",
            "validHours": "2", "sendAt": "2026-12-01T08:00", "iosBadge": "3", "iosSound": "chime.caf", "iosCategory": "", "androidMode": "notification",
            "androidChannel": "trips", "androidImage": "https://example.com/a.png", "androidSound": "",
        ])
        let request = try object(try form.document(requestId: "r", proof: false))
        let content = try #require(request["content"] as? [String: Any])
        #expect(content["title"] == nil, "an empty title is left to the template")
        #expect(content["body"] as? String == "Hello")
        #expect(content["languages"] as? [String: [String: String]] == ["fr": ["title": "Salut", "body": "Bonjour"], "pt-BR": ["body": "Olá"]])
        let ios = try #require(content["ios"] as? [String: Any])
        #expect(ios.keys.sorted() == ["badge", "sound"])
        #expect(ios["badge"] as? Int == 3)
        #expect(ios["sound"] as? String == "chime.caf")
        #expect(content["android"] as? [String: String] == ["mode": "notification", "channelId": "trips", "image": "https://example.com/a.png"])
        #expect(request["template"] as? [String: String] == ["name": "welcome"])
        #expect(request["priority"] as? String == "transactional")
        #expect((request["throttle"] as? [String: Any])?["perSecond"] as? Int == 50)
        #expect(request["validUntil"] as? String == "2026-12-01T10:00:00Z", "two hours after the send time")

        let plain = try object(try ConsoleComposer(fields: ["service": "s", "body": "b", "throttle": "fast"]).document(requestId: "r", proof: false))
        #expect(plain["priority"] == nil && plain["template"] == nil && plain["validUntil"] == nil)
        #expect((plain["content"] as? [String: Any])?.keys.sorted() == ["body"])
        #expect((plain["throttle"] as? [String: Any])?["perSecond"] as? String == "fast", "sent as typed, for the planner to refuse by name")
        #expect(throws: ConsoleComposer.ComposerProblem.self) {
            try ConsoleComposer(fields: ["service": "s", "body": "b", "validHours": "two"]).document(requestId: "r", proof: false)
        }
    }

    @Test("an unknown audience is every device, never an injected field")
    func audience() throws {
        let form = ConsoleComposer(fields: ["service": "s", "body": "b", "audience": "where\"}"])
        let request = try object(try form.document(requestId: "r", proof: false))
        #expect((request["audience"] as? [String: Any])?.keys.sorted() == ["all"])
    }
}

@Suite("The console's condition builder")
struct ConsoleConditionBuilderTests {
    @Test("the filled rows become audience.filter in all or any; empty rows are left out; lists are comma-separated")
    func rows() throws {
        let form = ConsoleComposer(fields: [
            "service": "s", "body": "b", "audience": "filter", "match": "any",
            "cond0Field": "param", "cond0Param": " tier ", "cond0Op": "in", "cond0Value": "gold, silver",
            "cond1Field": "osLanguage", "cond1Op": "starts with", "cond1Value": "fr",
            "cond2Field": "registeredAt", "cond2Op": "", "cond2Value": "ignored",
            "cond3Field": "osVersion", "cond3Op": "exists", "cond3Value": "ignored too",
        ])
        let request = try #require(try JSONSerialization.jsonObject(with: try form.document(requestId: "r", proof: false)) as? [String: Any])
        let filter = try #require((request["audience"] as? [String: Any])?["filter"] as? [String: Any])
        let conditions = try #require(filter["any"] as? [[String: Any]])
        #expect(conditions.count == 3)
        #expect(conditions[0]["param"] as? String == "tier")
        #expect(conditions[0]["values"] as? [String] == ["gold", "silver"])
        #expect(conditions[1]["device"] as? String == "osLanguage")
        #expect(conditions[1]["value"] as? String == "fr")
        #expect(conditions[2].keys.sorted() == ["device", "op"], "exists takes no value")
    }

    @Test("an unknown field or operator is never sent; no row filled is an empty filter the planner refuses, not everyone")
    func unknown() throws {
        let form = ConsoleComposer(fields: [
            "service": "s", "body": "b", "audience": "filter", "match": "none\"", "cond0Field": "params->>x", "cond0Op": "=", "cond1Op": "LIKE",
        ])
        let request = try #require(try JSONSerialization.jsonObject(with: try form.document(requestId: "r", proof: false)) as? [String: Any])
        let filter = try #require((request["audience"] as? [String: Any])?["filter"] as? [String: Any])
        #expect(filter.keys.sorted() == ["all"])
        #expect((filter["all"] as? [Any])?.isEmpty == true)
    }
}

@Suite("The console's segment audience")
struct ConsoleSegmentAudienceTests {
    @Test("a segment by name becomes audience.segment (the latest version), whatever the condition rows hold")
    func segment() throws {
        let form = ConsoleComposer(fields: [
            "service": "s", "body": "b", "audience": "segment", "segment": " premium-fr ", "cond0Op": "exists", "cond0Param": "tier",
        ])
        let request = try #require(try JSONSerialization.jsonObject(with: try form.document(requestId: "r", proof: false)) as? [String: Any])
        let audience = try #require(request["audience"] as? [String: Any])
        #expect(audience.keys.sorted() == ["segment"])
        #expect((audience["segment"] as? [String: Any])?["name"] as? String == "premium-fr")
    }
}

@Suite("The compose form's rarer platform options and refusals at their fields")
struct ConsoleComposerFieldTests {
    @Test("the iOS thread and interruption level, the Android colour and click action become content.ios and content.android")
    func platformOptions() throws {
        let form = ConsoleComposer(fields: [
            "service": "s", "body": "b", "iosThreadId": " trip-42 ", "iosInterruptionLevel": "time-sensitive", "androidMode": "notification",
            "androidColor": "#3b6ea8", "androidClickAction": "OPEN_TRIP",
        ])
        let request = try #require(try JSONSerialization.jsonObject(with: try form.document(requestId: "r", proof: false)) as? [String: Any])
        let content = try #require(request["content"] as? [String: Any])
        #expect(content["ios"] as? [String: String] == ["threadId": "trip-42", "interruptionLevel": "time-sensitive"])
        #expect(content["android"] as? [String: String] == ["mode": "notification", "color": "#3b6ea8", "clickAction": "OPEN_TRIP"])
        #expect(ConsoleComposer(fields: ["iosInterruptionLevel": "loud"]).iosInterruptionLevel == "", "a level the contract does not have is never sent")
        let page = ConsolePages.compose(form, catalog: .init(services: ["s"]), preview: nil, problem: nil, csrf: "c")
        #expect(page.contains(#"<option value="time-sensitive" selected>time-sensitive</option>"#))
        #expect(page.contains(##"id="androidColor" name="androidColor" type="text" size="8" maxlength="7" value="#3b6ea8""##))
    }

    @Test("a refusal is mapped to the input of the path it starts with: options, the sent condition rows, the named variant rows")
    func refusalToInput() {
        let form = ConsoleComposer(fields: [
            "cond0Op": "=", "cond1Op": "", "cond2Field": "platform", "cond2Op": "between", "var0Name": "", "var1Name": "B",
        ])
        #expect(form.input(forProblem: "content.ios.badge must be 0 or more") == "iosBadge")
        #expect(form.input(forProblem: "content.android.color must be #rrggbb") == "androidColor")
        #expect(form.input(forProblem: "content.ios.sound.volume must be between 0 and 1") == "iosSound")
        #expect(form.input(forProblem: "content.android.sound 'x' is not declared by Android app 'k'") == "androidSound")
        #expect(form.input(forProblem: "audience.filter.all is empty") == "match")
        // Row 2 had no operator, so the second condition sent is row 3.
        #expect(form.input(forProblem: "audience.filter.all[1].op 'between' does not apply to device field platform") == "cond2Op")
        #expect(form.input(forProblem: "audience.filter.all[0].value must be a number") == "cond0Value")
        #expect(form.input(forProblem: "audience.filter.all[5].value must be a number") == nil)
        // The texts above are variant 0; the first named row (the second one here) is variant 1.
        #expect(form.input(forProblem: "content.variants[1].share must be a whole number") == "var1Share")
        #expect(form.input(forProblem: "content.variants[0].share must be a whole number") == "variantAShare")
        #expect(form.input(forProblem: "content.variants shares must add up to 100") == nil)
        #expect(form.input(forProblem: "the service is unknown") == nil)
        #expect(
            form.problemsByInput(["content.ios.badge must be 0 or more", "content.ios.badge is too large", "something else"])
                == ["iosBadge": "content.ios.badge must be 0 or more; content.ios.badge is too large"])

        let page = ConsolePages.compose(
            form, catalog: .init(services: ["s"]), preview: nil, problem: "refused (400)", csrf: "c",
            problems: ["content.android.color must be #rrggbb", "audience.filter.all[1].op 'between' does not apply"])
        #expect(page.contains(#"aria-invalid="true" aria-describedby="androidColor-problem">"#))
        #expect(page.contains(##"<strong class="field-problem" id="androidColor-problem">content.android.color must be #rrggbb</strong>"##))
        #expect(page.contains(#"<strong class="field-problem" id="cond2Op-problem">audience.filter.all[1].op &#39;between&#39; does not apply</strong>"#))
        #expect(page.components(separatedBy: "field-problem").count - 1 == 2, "only the inputs refused")
    }
}
