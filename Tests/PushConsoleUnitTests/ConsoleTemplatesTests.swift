import Foundation
import Testing

@testable import PushConsole

@Suite("The console's page templates")
struct ConsoleTemplatesTests {
    @Test("every template parses into the library, and none writes a value unescaped")
    func library() {
        for (name, text) in ConsoleTemplates.all {
            #expect(ConsoleTemplates.library.getTemplate(named: name) != nil, "\(name)")
            #expect(!text.contains("{{{") && !text.contains("{{&"), "\(name) writes a value unescaped")
        }
    }

    @Test("values from the database or the request are escaped in every part of a page")
    func escaping() {
        let hostile = #"<script>"x" & 'y'</script>"#
        let escaped = "&lt;script&gt;&quot;x&quot; &amp; &#39;y&#39;&lt;/script&gt;"
        let page = ConsolePages.devices(
            search: hostile,
            results: [
                ConsoleReports.Device(
                    service: hostile, app: hostile, platform: "ios", environment: "production", userKey: hostile, token: "t", deviceName: hostile,
                    deviceModel: "", osName: "", osVersion: "", params: "{}", disabled: true, disabledReason: hostile, disabledAt: Date(),
                    invalidSince: nil, registeredAt: Date())
            ], csrf: hostile)
        #expect(!page.contains("<script>"))
        #expect(
            page.components(separatedBy: escaped).count - 1 == 10,
            "the search, the CSRF token, service, app, user key, device and reason; the device actions' CSRF token, search and service")
        let preview = ConsolePages.previewContent(nil, problem: hostile)
        #expect(preview.contains("<strong>Not valid yet:</strong> \(escaped)</p>"))
    }
}
