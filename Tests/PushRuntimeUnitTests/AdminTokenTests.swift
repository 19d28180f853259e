import Foundation
import PushRuntime
import PushStore
import Testing

@Suite("Admin API tokens: the bootstrap token and operators' personal tokens")
struct AdminTokenTests {
    @Test("PUSH_ADMIN_TOKEN_DISABLED turns the bootstrap token off as a bearer token; anything but true or false stops the service")
    func bootstrapDisabled() throws {
        let secret = "bootstrap-token-0123456789"
        let enabled = try #require(try AdminToken.fromEnvironment(["PUSH_ADMIN_TOKEN": secret]))
        #expect(enabled.accepts(authorization: "Bearer \(secret)"))
        #expect(!enabled.accepts(authorization: "Bearer \(secret)x"))
        for value in ["true", "1", "YES"] {
            let disabled = try #require(try AdminToken.fromEnvironment(["PUSH_ADMIN_TOKEN": secret, "PUSH_ADMIN_TOKEN_DISABLED": value]))
            #expect(!disabled.accepts(authorization: "Bearer \(secret)"), "\(value)")
        }
        #expect(
            try AdminToken.fromEnvironment(["PUSH_ADMIN_TOKEN": secret, "PUSH_ADMIN_TOKEN_DISABLED": "false"])?.accepts(authorization: "Bearer \(secret)")
                == true)
        #expect(throws: ConfigurationError.self) { try AdminToken.fromEnvironment(["PUSH_ADMIN_TOKEN": secret, "PUSH_ADMIN_TOKEN_DISABLED": "maybe"]) }
    }

    @Test("a personal token: pat_, its id, 43 characters of secret; parsed back; anything else is not one")
    func personalTokens() throws {
        var seen: Set<String> = []
        for _ in 0..<1_000 {
            let (tokenId, token, digest) = OperatorToken.make()
            #expect(token.utf8.count == 4 + 32 + 1 + 43)
            let parsed = try #require(OperatorToken.parse(token[...]))
            #expect(parsed.tokenId == tokenId)
            #expect(digest.count == 64 && !token.contains(digest))
            #expect(seen.insert(String(parsed.secret)).inserted)
        }
        for text in [
            "", "pat_", "pat_x_y", "tok_0123456789abcdef0123456789abcdef_secret", "pat_0123456789abcdef0123456789abcdeg_secret",
            "pat_0123456789abcdef0123456789abcdef_",
        ] {
            #expect(OperatorToken.parse(text[...]) == nil, "\(text)")
        }
    }

    @Test("each role's permissions, as docs/admin-api.md lists them")
    func roles() {
        #expect(AdminRole.admin.permissions == Set(AdminPermission.allCases))
        #expect(AdminRole.marketer.permissions == [.session, .catalogRead, .contentWrite, .deliveriesRead, .deliveriesWrite])
        #expect(AdminRole.analyst.permissions == [.session, .catalogRead, .deliveriesRead])
        #expect(AdminRole.support.permissions == [.session, .catalogRead, .devicesRead, .devicesWrite])
        #expect(AdminRole.privacy.permissions == [.session, .catalogRead, .erasure])
        let limited = AdminPrincipal(name: "m", role: .marketer, services: ["a"])
        #expect(limited.mayActOn(service: "a") && !limited.mayActOn(service: "b"))
        #expect(AdminPrincipal.bootstrap.mayActOn(service: "anything"))
    }
}
