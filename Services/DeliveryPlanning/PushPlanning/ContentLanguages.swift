import PushEvents

/// Which of a delivery's language texts (`content.languages`) a device gets, by the
/// `osLanguage` its SDK registered (`en-US`, `fr_FR`, `de`): tags compare without case and
/// with `_` read as `-`. In order:
///
/// 1. the request's tag equal to the device's (`pt-BR` for `pt_BR`);
/// 2. the tag of the device's language alone (`fr` for `fr-CA`);
/// 3. the first tag, in the order of their lower-cased text, of another region or script of
///    the device's language (`fr-FR` for `fr-CA` when the request has no `fr`): a French
///    speaker reads French from France sooner than the default;
/// 4. none: the default `title`, `subtitle`, `body` (a device without `osLanguage` too).
package struct ContentLanguages: Sendable {
    /// The request's tags by their compared form.
    private let tags: [String: String]
    /// The compared forms, sorted (rule 3's order).
    private let sorted: [String]

    package init(_ languages: [String: DeliveryRequest.Texts]?) {
        var tags: [String: String] = [:]
        for tag in (languages ?? [:]).keys.sorted() { tags[Self.compared(tag)] = tags[Self.compared(tag)] ?? tag }
        self.tags = tags
        sorted = tags.keys.sorted()
    }

    package var isEmpty: Bool { tags.isEmpty }

    /// The request's tag whose texts a device of this `osLanguage` gets; nil for the default.
    package func tag(forDevice osLanguage: String) -> String? {
        guard !tags.isEmpty else { return nil }
        let device = Self.compared(osLanguage)
        guard !device.isEmpty else { return nil }
        if let tag = tags[device] { return tag }
        let language = Self.language(of: device)
        if let tag = tags[String(language)] { return tag }
        return sorted.first { Self.language(of: $0) == language }.flatMap { tags[$0] }
    }

    /// Lower case, `_` as `-`, without surrounding spaces.
    package static func compared(_ tag: String) -> String {
        Substring(tag).trimmingSpaces().lowercased().replacingOccurrences(of: "_", with: "-")
    }

    private static func language(of compared: String) -> Substring {
        compared.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
    }

    /// A BCP 47 tag of the forms a request may use: a language of 2 or 3 letters, then
    /// optionally a script of 4 letters, then optionally a region of 2 letters or 3 digits,
    /// separated by `-` (`fr`, `pt-BR`, `zh-Hant-TW`, `es-419`).
    package static func isWellFormed(_ tag: String) -> Bool {
        let parts = tag.split(separator: "-", omittingEmptySubsequences: false)
        func letters(_ part: Substring, _ counts: ClosedRange<Int>) -> Bool {
            counts.contains(part.count) && part.unicodeScalars.allSatisfy { $0.isASCII && $0.properties.isAlphabetic }
        }
        func digits(_ part: Substring) -> Bool { part.count == 3 && part.unicodeScalars.allSatisfy { ("0"..."9").contains($0) } }
        guard let first = parts.first, letters(first, 2...3), parts.count <= 3 else { return false }
        var rest = parts.dropFirst()
        if let script = rest.first, letters(script, 4...4) { rest = rest.dropFirst() }
        if let region = rest.first, letters(region, 2...2) || digits(region) { rest = rest.dropFirst() }
        return rest.isEmpty
    }
}
