/// A text with personalization placeholders, parsed once per delivery and rendered per device.
///
/// - `{{userKey}}`: the subscription's user key;
/// - `{{param.<name>}}`: a subscription parameter (empty when the device has none);
/// - `{{param.<name>|<fallback>}}`: the parameter, or the fallback text when it is missing or
///   empty.
///
/// Spaces just inside the braces are allowed. Any other `{{…}}` is an error, so that a typo
/// rejects the request instead of reaching millions of screens.
package struct MessageTemplate: Sendable, Hashable {
    enum Part: Sendable, Hashable {
        case text(String)
        case userKey
        case param(name: String, fallback: String?)
    }

    let parts: [Part]

    /// True when the text has no placeholder (rendering returns it as is).
    package var isConstant: Bool { parts.allSatisfy { if case .text = $0 { true } else { false } } }

    /// Parameter names the template reads.
    package var parameterNames: Set<String> {
        Set(parts.compactMap { if case .param(let name, _) = $0 { name } else { nil } })
    }

    package var usesUserKey: Bool { parts.contains(.userKey) }

    package struct SyntaxError: Error, Sendable, Hashable, CustomStringConvertible {
        package var description: String
    }

    package init(parsing source: String) throws(SyntaxError) {
        var parts: [Part] = []
        var rest = Substring(source)
        while let open = rest.range(of: "{{") {
            if open.lowerBound > rest.startIndex { parts.append(.text(String(rest[..<open.lowerBound]))) }
            guard let close = rest[open.upperBound...].range(of: "}}") else {
                throw SyntaxError(description: "a '{{' is never closed with '}}'")
            }
            let inner = rest[open.upperBound..<close.lowerBound].trimmingSpaces()
            parts.append(try Self.placeholder(inner))
            rest = rest[close.upperBound...]
        }
        if !rest.isEmpty { parts.append(.text(String(rest))) }
        self.parts = parts
    }

    private static func placeholder(_ inner: Substring) throws(SyntaxError) -> Part {
        if inner == "userKey" { return .userKey }
        guard inner.hasPrefix("param.") else {
            throw SyntaxError(description: "unknown placeholder {{\(inner.prefix(40))}}: use {{userKey}}, {{param.<name>}} or {{param.<name>|<fallback>}}")
        }
        let body = inner.dropFirst("param.".count)
        let name: Substring
        let fallback: String?
        if let bar = body.firstIndex(of: "|") {
            name = body[..<bar].trimmingSpaces()
            fallback = String(body[body.index(after: bar)...].trimmingSpaces())
        } else {
            name = body
            fallback = nil
        }
        guard !name.isEmpty, name.count <= 64,
            name.unicodeScalars.allSatisfy({
                $0.isASCII && ($0.properties.isAlphabetic || $0.properties.numericType != nil || "_-.".unicodeScalars.contains($0))
            })
        else {
            throw SyntaxError(description: "placeholder {{param.\(name.prefix(40))}} needs a parameter name of letters, digits, '_', '-', '.'")
        }
        return .param(name: String(name), fallback: fallback)
    }

    /// The text for one device.
    package func render(userKey: String, params: [String: String]) -> String {
        if parts.count == 1, case .text(let text) = parts[0] { return text }
        var output = ""
        for part in parts {
            switch part {
            case .text(let text): output += text
            case .userKey: output += userKey
            case .param(let name, let fallback):
                if let value = params[name], !value.isEmpty {
                    output += value
                } else if let fallback {
                    output += fallback
                }
            }
        }
        return output
    }
}

extension Substring {
    func trimmingSpaces() -> Substring {
        var result = self
        while result.first == " " { result = result.dropFirst() }
        while result.last == " " { result = result.dropLast() }
        return result
    }
}
