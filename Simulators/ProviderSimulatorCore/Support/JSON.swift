import Foundation

/// Thin wrappers over `JSONSerialization`: the simulators check arbitrary provider payloads, so
/// they work on untyped trees rather than `Codable` models.
package enum JSON {
    /// Compact, keys sorted, `/` not escaped: the providers write `"projects/p/messages/1"`, not
    /// `JSONSerialization`'s default `"projects\/p\/messages\/1"` (which a client's fast path for
    /// FCM's success body rightly does not take).
    package static func encode(_ object: Any) -> [UInt8] {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]) else {
            return Array("{}".utf8)
        }
        return Array(data)
    }

    /// Parses a JSON object; nil when the bytes are not JSON or not an object.
    package static func object<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> [String: Any]? {
        guard let value = try? JSONSerialization.jsonObject(with: Data(bytes), options: []) else {
            return nil
        }
        return value as? [String: Any]
    }

    /// Size in bytes of a JSON value as a compact serialisation.
    package static func size(_ object: Any) -> Int {
        if let string = object as? String {
            return string.utf8.count + 2
        }
        guard JSONSerialization.isValidJSONObject(object),
            let data = try? JSONSerialization.data(withJSONObject: object, options: [])
        else { return 0 }
        return data.count
    }
}
