import Crypto
import Foundation
import PushConsole
import PushRuntime
import Testing

@Suite("Console sessions, CSRF tokens and HTML escaping")
struct ConsoleSessionsTests {
    static let token = try! AdminToken("a-console-admin-token-for-tests")
    static let sessions = ConsoleSessions(key: token.derivedKey(purpose: "push console sessions v1"), lifetime: .seconds(3600))

    @Test("a session cookie is accepted until it expires, then never")
    func expiry() throws {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let cookie = Self.sessions.issue(now: start)
        let session = try #require(Self.sessions.session(cookie: cookie, now: start.addingTimeInterval(3599)))
        #expect(session.expiresAt == 1_800_003_600)
        #expect(Self.sessions.session(cookie: cookie, now: start.addingTimeInterval(3600)) == nil, "expired")
    }

    @Test("a forged, altered or foreign cookie is refused")
    func forgery() throws {
        let now = Date()
        let cookie = Self.sessions.issue(now: now)
        let parts = cookie.split(separator: ".").map(String.init)
        #expect(parts.count == 4)
        // A later expiry with the old signature.
        #expect(Self.sessions.session(cookie: "v1.9999999999.\(parts[2]).\(parts[3])") == nil)
        #expect(Self.sessions.session(cookie: "v1.\(parts[1]).\(parts[2]).forged") == nil)
        #expect(Self.sessions.session(cookie: "") == nil)
        #expect(Self.sessions.session(cookie: nil) == nil)
        // Signed under another admin token: another key.
        let other = ConsoleSessions(
            key: try AdminToken("another-admin-token-entirely").derivedKey(purpose: "push console sessions v1"), lifetime: .seconds(3600))
        #expect(other.session(cookie: cookie) == nil)
        // The same token in another process derives the same key (replicas share sessions).
        let replica = ConsoleSessions(
            key: try AdminToken("a-console-admin-token-for-tests").derivedKey(purpose: "push console sessions v1"), lifetime: .seconds(3600))
        #expect(replica.session(cookie: cookie) != nil)
    }

    @Test("each session has its own CSRF token; the sign-in form's token expires")
    func csrf() throws {
        let a = try #require(Self.sessions.session(cookie: Self.sessions.issue()))
        let b = try #require(Self.sessions.session(cookie: Self.sessions.issue()))
        #expect(a.csrfToken != b.csrfToken)
        #expect(!a.csrfToken.isEmpty)
        let now = Date()
        let form = Self.sessions.signInFormToken(now: now)
        #expect(Self.sessions.acceptsSignInFormToken(form, now: now))
        #expect(!Self.sessions.acceptsSignInFormToken(form, now: now.addingTimeInterval(3601)))
        #expect(!Self.sessions.acceptsSignInFormToken("9999999999.forged", now: now))
        #expect(!Self.sessions.acceptsSignInFormToken(nil, now: now))
    }

    @Test("a named operator's session cookie carries its session token until the token's expiry; altered, it is refused")
    func operatorSessions() throws {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let bearer = "pat_0123456789abcdef0123456789abcdef_" + String(repeating: "A", count: 43)
        let cookie = Self.sessions.issue(bearer: bearer, expiresAt: start.addingTimeInterval(600))
        #expect(cookie.hasPrefix("v2.1800000600."))
        let session = try #require(Self.sessions.session(cookie: cookie, now: start))
        #expect(session.bearer == bearer && session.expiresAt == 1_800_000_600)
        #expect(Self.sessions.session(cookie: cookie, now: start.addingTimeInterval(600)) == nil, "expired with its token")
        let other = try #require(Self.sessions.session(cookie: Self.sessions.issue(bearer: bearer + "B", expiresAt: start.addingTimeInterval(600)), now: start))
        #expect(other.csrfToken != session.csrfToken)
        // Another token under the first one's signature, or the admin-token form of it: refused.
        let parts = cookie.split(separator: ".").map(String.init)
        #expect(Self.sessions.session(cookie: "v2.\(parts[1]).\(bearer)B.\(parts[3])", now: start) == nil)
        #expect(Self.sessions.session(cookie: "v1.\(parts[1]).\(parts[2]).\(parts[3])", now: start) == nil)
        #expect(try #require(Self.sessions.session(cookie: Self.sessions.issue(now: start), now: start)).bearer == nil)
    }

    @Test("keys derived for different purposes differ")
    func derivedKeys() {
        let a = Self.token.derivedKey(purpose: "push console sessions v1").withUnsafeBytes { Data($0) }
        let b = Self.token.derivedKey(purpose: "something else").withUnsafeBytes { Data($0) }
        #expect(a != b)
        #expect(a.count == 32)
    }

    @Test("values are escaped in HTML; form bodies decode")
    func escaping() {
        #expect(ConsoleHTML.escape(#"<script>"x" & 'y'</script>"#) == "&lt;script&gt;&quot;x&quot; &amp; &#39;y&#39;&lt;/script&gt;")
        #expect(ConsoleEndpoints.decodeForm("token=a+b%2Fc&next=%2Fdeliveries%2F3&empty") == ["token": "a b/c", "next": "/deliveries/3", "empty": ""])
        #expect(ConsolePages.signIn(formToken: "t", next: "/x\"><script>", problem: "<b>").contains("&lt;b&gt;"))
        #expect(!ConsolePages.signIn(formToken: "t", next: "/x\"><script>", problem: nil).contains("<script>"))
    }

    @Test("sign-in sends back only to a path of the console: encoded tabs, newlines, backslashes and slashes that lead off-site go to the deliveries")
    func nextStaysOnSite() {
        for kept in ["/deliveries", "/deliveries/42", "/devices?userKey=a%20b", "/deliveries?service=neo&status=planned"] {
            #expect(ConsoleEndpoints.safeNext(kept) == kept, "\(kept)")
        }
        for refused in [
            nil, "", "deliveries", "https://evil.example", "//evil.example", "/%09/evil.example", "/%0a/evil.example", "/%0D%0A/evil.example",
            "/\\evil.example", "/%5C/evil.example", "/%2F/evil.example", "/%2fevil.example", "/\t/evil.example", "/ /evil.example", "/%7F/x",
            "/signin?next=/deliveries", "/%zz", String(repeating: "/a", count: 1_100),
        ] {
            #expect(ConsoleEndpoints.safeNext(refused) == "/deliveries", "\(String(describing: refused))")
        }
    }
}
