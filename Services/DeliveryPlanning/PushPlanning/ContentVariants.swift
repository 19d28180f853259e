import Foundation
import PushEvents

/// Which of a delivery's A/B variants (`content.variants`) a device gets.
///
/// The device's message id (SHA-256 of the delivery, the app and the token:
/// `MessageIdentity`) gives it a point in 0..<10,000; the variants take consecutive ranges of
/// that line in the request's order, each `share` per cent of it. So the split is the shares'
/// on a large audience, a device gets the same variant every time the delivery is planned
/// (a crash, a replay), and two deliveries split the same devices independently (the delivery
/// id is part of the hash).
package struct ContentVariants: Sendable {
    /// Each variant's name and the end (exclusive) of its range, in the request's order.
    private let ends: [(name: String, end: UInt32)]

    package static let points: UInt32 = 10_000

    package init(_ variants: [DeliveryRequest.Variant]?) {
        var end: UInt32 = 0
        ends = (variants ?? []).map { variant in
            end += UInt32(clamping: max(variant.share, 0)) * (Self.points / 100)
            return (variant.name, end)
        }
    }

    package var isEmpty: Bool { ends.isEmpty }

    /// The index in `content.variants` of the variant this message id gets; nil without
    /// variants. A point past the last range (shares that do not add up to 100, which the
    /// validator refuses) gets the last variant.
    package func index(forMessage messageId: UUID) -> Int? {
        guard !ends.isEmpty else { return nil }
        let point = Self.point(of: messageId)
        return ends.firstIndex { point < $0.end } ?? ends.count - 1
    }

    /// The message id's point on the line: its first four bytes, big-endian, modulo 10,000
    /// (the id's bytes are a SHA-256 digest's, so the points are uniform to within 10⁻⁶).
    package static func point(of messageId: UUID) -> UInt32 {
        let bytes = messageId.uuid
        let value = UInt32(bytes.0) << 24 | UInt32(bytes.1) << 16 | UInt32(bytes.2) << 8 | UInt32(bytes.3)
        return value % points
    }

    /// A variant name: 1 to 32 letters, digits, `_` or `-`, starting with a letter or a digit.
    package static func isWellFormedName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, (1...32).contains(name.unicodeScalars.count) else { return false }
        func allowed(_ scalar: Unicode.Scalar) -> Bool {
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "_" || scalar == "-")
        }
        return allowed(first) && first != "_" && first != "-" && name.unicodeScalars.allSatisfy(allowed)
    }
}
