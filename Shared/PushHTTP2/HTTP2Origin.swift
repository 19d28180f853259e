/// Where an endpoint lives, read from a base URL such as `https://api.push.apple.com` or
/// `https://127.0.0.1:8443/prefix`: only `https` is accepted (the providers speak HTTP/2 over
/// TLS only).
package struct HTTP2Origin: Sendable, Equatable {
    package var host: String
    package var port: Int
    /// The base URL's path without its trailing slash ("" for none); request paths go after it.
    package var pathPrefix: String

    package init(host: String, port: Int = 443, pathPrefix: String = "") {
        self.host = host
        self.port = port
        self.pathPrefix = pathPrefix
    }

    /// Nil when `url` is not `https://host[:port][/path]`.
    package init?(url: String) {
        let scheme = "https://"
        guard url.lowercased().hasPrefix(scheme) else { return nil }
        var rest = Substring(url.dropFirst(scheme.count))
        let path: Substring
        if let slash = rest.firstIndex(of: "/") {
            path = rest[slash...]
            rest = rest[..<slash]
        } else {
            path = ""
        }
        var host: Substring
        var portText: Substring?
        if rest.hasPrefix("[") {
            // An IPv6 address: [::1]:8443
            guard let close = rest.firstIndex(of: "]") else { return nil }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if after.hasPrefix(":") { portText = after.dropFirst() } else if !after.isEmpty { return nil }
        } else if let colon = rest.lastIndex(of: ":") {
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        } else {
            host = rest
        }
        guard !host.isEmpty, !host.contains("@") else { return nil }
        var port = 443
        if let portText {
            guard let parsed = Int(portText), (1...65535).contains(parsed) else { return nil }
            port = parsed
        }
        var prefix = String(path)
        while prefix.hasSuffix("/") { prefix.removeLast() }
        self.init(host: String(host), port: port, pathPrefix: prefix)
    }
}
