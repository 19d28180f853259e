import PushHTTP2
import Testing

@Suite("HTTP2Origin: base URLs")
struct HTTP2OriginTests {
    @Test("a provider's base URL: host, port 443, no prefix")
    func provider() {
        #expect(HTTP2Origin(url: "https://api.push.apple.com") == HTTP2Origin(host: "api.push.apple.com", port: 443, pathPrefix: ""))
        #expect(HTTP2Origin(url: "https://fcm.googleapis.com/") == HTTP2Origin(host: "fcm.googleapis.com", port: 443, pathPrefix: ""))
    }

    @Test("a simulator or proxy: address, port, path prefix without its trailing slash")
    func simulatorAndProxy() {
        #expect(HTTP2Origin(url: "https://127.0.0.1:8443") == HTTP2Origin(host: "127.0.0.1", port: 8443))
        #expect(HTTP2Origin(url: "HTTPS://proxy.internal:9000/apns/") == HTTP2Origin(host: "proxy.internal", port: 9000, pathPrefix: "/apns"))
        #expect(HTTP2Origin(url: "https://[::1]:8443/x") == HTTP2Origin(host: "::1", port: 8443, pathPrefix: "/x"))
    }

    @Test(
        "refused: another scheme, no host, a bad port, credentials in the URL",
        arguments: [
            "http://api.push.apple.com", "api.push.apple.com", "https://", "https://:443", "https://host:0",
            "https://host:65536", "https://host:https", "https://user@host", "https://[::1", "https://[::1]x",
        ])
    func refused(url: String) {
        #expect(HTTP2Origin(url: url) == nil)
    }
}
