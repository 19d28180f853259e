/// Builds compact JSON text by appending, for payloads produced a million at a time (faster
/// than an encoder, and the key order is the one written).
struct JSONText {
    private(set) var text = ""
    private var needsComma: [Bool] = [false]

    init() { text.reserveCapacity(512) }

    mutating func openObject(_ key: String? = nil) {
        separator()
        if let key { appendKey(key) }
        text += "{"
        needsComma.append(false)
    }

    mutating func closeObject() {
        text += "}"
        needsComma.removeLast()
    }

    mutating func string(_ key: String, _ value: String) {
        separator()
        appendKey(key)
        Self.appendQuoted(value, to: &text)
    }

    mutating func number(_ key: String, _ value: Int) {
        separator()
        appendKey(key)
        text += String(value)
    }

    mutating func number(_ key: String, _ value: Double) {
        separator()
        appendKey(key)
        text += value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }

    private mutating func separator() {
        if needsComma[needsComma.count - 1] { text += "," } else { needsComma[needsComma.count - 1] = true }
    }

    private mutating func appendKey(_ key: String) {
        Self.appendQuoted(key, to: &text)
        text += ":"
    }

    static func quoted(_ value: String) -> String {
        var text = ""
        appendQuoted(value, to: &text)
        return text
    }

    static func appendQuoted(_ value: String, to text: inout String) {
        text += "\""
        var plain = true
        for unit in value.utf8 where unit < 0x20 || unit == 0x22 || unit == 0x5C {
            plain = false
            break
        }
        if plain {
            text += value
        } else {
            for scalar in value.unicodeScalars {
                switch scalar {
                case "\"": text += "\\\""
                case "\\": text += "\\\\"
                case "\n": text += "\\n"
                case "\r": text += "\\r"
                case "\t": text += "\\t"
                case _ where scalar.value < 0x20:
                    let hex = String(scalar.value, radix: 16)
                    text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                default: text.unicodeScalars.append(scalar)
                }
            }
        }
        text += "\""
    }
}
