import Foundation
import Hummingbird
import NIOCore

/// What every console response shares: the security headers (no script or style from anywhere
/// but the console itself), and the formats of times, rates and query values. The pages' HTML is
/// in the templates (ConsoleTemplates), which escape every value as `escape` does.
package enum ConsoleHTML {
    package static func escape(_ text: some StringProtocol) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }

    /// A query-string value, percent-encoded.
    package static func queryValue(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }

    package static let securityHeaders: HTTPFields = [
        .contentSecurityPolicy:
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        .xContentTypeOptions: "nosniff",
        HTTPFields.Element.Name("Referrer-Policy")!: "no-referrer",
        .cacheControl: "no-store",
        HTTPFields.Element.Name("X-Frame-Options")!: "DENY",
    ]

    package static func html(_ status: HTTPResponse.Status = .ok, _ text: String, headers extra: HTTPFields = [:]) -> Response {
        var headers = securityHeaders
        headers[.contentType] = "text/html; charset=utf-8"
        headers.append(contentsOf: extra)
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    package static func redirect(to location: String, headers extra: HTTPFields = [:]) -> Response {
        var headers = securityHeaders
        headers[.location] = location
        headers.append(contentsOf: extra)
        return Response(status: .seeOther, headers: headers)
    }

    /// `2026-11-27 02:15 UTC`.
    package static func time(_ date: Date?) -> String {
        guard let date else { return "—" }
        let iso = date.formatted(Date.ISO8601FormatStyle(timeZone: .gmt))  // 2026-11-27T02:15:07Z
        return "\(iso.prefix(10)) \(iso.dropFirst(11).prefix(5)) UTC"
    }

    /// `36.4%`, or `—` when there is no rate.
    package static func percent(_ rate: Double?) -> String {
        guard let rate else { return "—" }
        return String(format: "%.1f%%", rate * 100)
    }
}
