import Foundation
import PushConsole
import Testing

@Suite("The console's audit page")
struct ConsoleAuditPageTests {
    func entry(_ name: String, status: Int, path: String = "/deliveries", service: String? = "trips") -> ConsoleReports.AuditEntry {
        ConsoleReports.AuditEntry(
            recordedAt: Date(timeIntervalSince1970: 1_795_000_000), operatorName: name, role: "marketer", method: "POST", path: path,
            permission: "deliveries:write", status: status, requestId: "req-<1>", service: service)
    }

    @Test("the calls in a table, escaped, refusals marked; the filters kept; none, a cap and a bad time said so")
    func page() {
        var page = ConsolePages.audit(
            operatorName: "al<ice>", service: "trips", permission: "erasure", since: "2026-11-18T00:00", until: "", problem: nil,
            entries: [entry("al<ice>", status: 403, path: "/d/<x>"), entry("bob", status: 202, service: nil)], limit: 200, csrf: "c")
        #expect(page.contains(#"<a href="/audit" aria-current="page">Audit</a>"#), "the navigation's current page")
        #expect(page.contains(#"<input id="operator" name="operator" type="text" size="16" maxlength="64" value="al&lt;ice&gt;">"#))
        #expect(page.contains(#"<option value="erasure" selected>erasure</option>"#))
        #expect(page.contains(#"value="2026-11-18T00:00""#))
        #expect(page.contains(#"<tr class="refused"><td>"#) && page.contains("<td>al&lt;ice&gt;</td>"))
        #expect(page.contains("<code>POST /d/&lt;x&gt;</code>") && page.contains("<code>req-&lt;1&gt;</code>"))
        #expect(page.contains("<td>—</td>"), "a call about no service")
        #expect(!page.contains("newest: narrow"), "under the limit: no cap said")

        page = ConsolePages.audit(
            operatorName: "", service: "", permission: "", since: "", until: "", problem: nil, entries: [entry("a", status: 200)], limit: 1, csrf: "c")
        #expect(page.contains("(the 1 newest: narrow the filters for older ones)"))
        #expect(page.contains(#"<option value="" selected>(any)</option>"#))

        page = ConsolePages.audit(operatorName: "", service: "", permission: "", since: "", until: "", problem: nil, entries: [], limit: 200, csrf: "c")
        #expect(page.contains("No call matches these filters.") && !page.contains(#"<table id="audit""#))

        page = ConsolePages.audit(
            operatorName: "", service: "", permission: "", since: "yesterday", until: "",
            problem: "From must be a date and time (2026-11-30T09:00), not 'yesterday'",
            entries: nil, limit: 200, csrf: "c")
        #expect(
            page.contains(#"<p class="problem" role="alert" id="audit-problem">From must be a date and time (2026-11-30T09:00), not &#39;yesterday&#39;</p>"#))
        #expect(!page.contains("No call matches"))
    }

    @Test("a device's system is shown once when the SDK puts its name in the version too")
    func system() {
        #expect(ConsolePages.system(osName: "iOS", osVersion: "iOS 18.1") == "iOS 18.1")
        #expect(ConsolePages.system(osName: "Android", osVersion: "14") == "Android 14")
        #expect(ConsolePages.system(osName: "iPadOS", osVersion: "ipados 17.0") == "ipados 17.0")
        #expect(ConsolePages.system(osName: "", osVersion: "14") == "14")
        #expect(ConsolePages.system(osName: "Android", osVersion: "") == "Android")
    }
}
