import Foundation
import Hummingbird
import NIOCore

/// HTML written by the server: every value from the database or the request goes through
/// `escape`, pages share one layout (skip link, navigation, one `main`), and every response
/// carries the same security headers (no script or style from anywhere but the console itself).
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

    /// A whole page. `csrf` is nil on the sign-in page (no navigation, no sign-out form).
    package static func page(title: String, csrf: String?, current: String = "", body: String) -> String {
        var navigation = ""
        if let csrf {
            func link(_ path: String, _ label: String) -> String {
                let marker = current == path ? " aria-current=\"page\"" : ""
                return "<li><a href=\"\(path)\"\(marker)>\(label)</a></li>"
            }
            navigation = """
                <header class="top"><p class="brand">Push console</p>
                <nav aria-label="Main"><ul>\(link("/deliveries", "Deliveries"))\(link("/catalog", "Catalog"))\(link("/devices", "Devices"))</ul></nav>
                <form method="post" action="/signout" class="signout"><input type="hidden" name="csrf" value="\(escape(csrf))"><button type="submit">Sign out</button></form>
                </header>
                """
        }
        return """
            <!doctype html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(escape(title)) · Push console</title>
            <link rel="stylesheet" href="/assets/console.css">
            <link rel="icon" href="/assets/icon.svg" type="image/svg+xml">
            <script src="/assets/console.js" defer></script>
            </head>
            <body>
            <a class="skip" href="#main">Skip to content</a>
            \(navigation)
            <main id="main" tabindex="-1">
            \(body)
            </main>
            </body>
            </html>
            """
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
