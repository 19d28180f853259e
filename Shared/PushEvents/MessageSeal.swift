import Crypto
import Foundation
import PushWire

#if canImport(Glibc)
    import Glibc
#endif

/// How a message record of version 2 names its device and holds its content
/// (docs/architecture.md, "Erasure"): in clear, the subject whose data key seals it and the
/// token's digest; sealed under that key (AES-256-GCM), the token and the payload (APNs) or the
/// HTTP v1 `message` object (FCM). An erasure deletes the key, after which no copy of the
/// record can be read back; a sender that finds no key ends the message without sending it.
package struct MessageSealing: Sendable, Hashable {
    /// `push.subject_keys.subject_id`: the person's (or anonymous device's) data key.
    package var subjectId: UUID
    /// Lowercase hex SHA-256 of the token (`TokenDigest`).
    package var tokenDigest: String
    /// The AES-GCM combined box (nonce, ciphertext, tag), base64.
    package var sealed: String

    package init(subjectId: UUID, tokenDigest: String, sealed: String) {
        self.subjectId = subjectId
        self.tokenDigest = tokenDigest
        self.sealed = sealed
    }

    /// Seals `token` and `content` for the message `messageId` (the box is bound to it: moved
    /// into another message's record, it does not open), under a random `nonce`.
    package static func seal(
        token: String, content: String, messageId: UUID, subjectId: UUID, key: [UInt8], nonce: AES.GCM.Nonce = AES.GCM.Nonce()
    ) throws -> MessageSealing {
        var plain: [UInt8] = []
        plain.reserveCapacity(5 + token.utf8.count + content.utf8.count)
        plain.append(1)  // the layout's version
        let length = UInt32(token.utf8.count)
        plain += [UInt8(length >> 24), UInt8(length >> 16 & 0xff), UInt8(length >> 8 & 0xff), UInt8(length & 0xff)]
        plain += token.utf8
        plain += content.utf8
        guard let combined = try AES.GCM.seal(plain, using: SymmetricKey(data: key), nonce: nonce, authenticating: context(messageId)).combined else {
            throw MessageSealError()
        }
        return MessageSealing(subjectId: subjectId, tokenDigest: TokenDigest.of(token), sealed: combined.base64EncodedString())
    }

    /// The token and content, or nil when `key` does not open the box (not its key, another
    /// message's box, altered) or the token is not the one the digest names.
    package func open(messageId: UUID, key: [UInt8]) -> (token: String, content: String)? {
        guard let combined = Data(base64Encoded: sealed), let box = try? AES.GCM.SealedBox(combined: combined),
            let plain = try? Array(AES.GCM.open(box, using: SymmetricKey(data: key), authenticating: Self.context(messageId))),
            plain.count >= 5, plain[0] == 1
        else { return nil }
        let length = Int(plain[1]) << 24 | Int(plain[2]) << 16 | Int(plain[3]) << 8 | Int(plain[4])
        guard plain.count >= 5 + length,
            let token = String(validating: plain[5..<5 + length], as: UTF8.self),
            let content = String(validating: plain[(5 + length)...], as: UTF8.self),
            TokenDigest.of(token) == tokenDigest
        else { return nil }
        return (token, content)
    }

    private static func context(_ messageId: UUID) -> [UInt8] { Array("message:\(messageId.lowercaseText)".utf8) }
}

/// Random AES-GCM nonces drawn from the kernel in blocks: swift-crypto's `AES.GCM.Nonce()`
/// asks for 8 bytes at a time, two `getrandom` calls per nonce, which were 4 % of the planner's
/// CPU when it sealed every message of a chunk one by one (docs/benchmarks.md).
package struct SealNonces {
    private var bytes: [UInt8]
    private var next = 0

    /// Draws the bytes of `count` nonces at once.
    package init(count: Int) {
        bytes = [UInt8](repeating: 0, count: 12 * max(1, count))
        bytes.withUnsafeMutableBytes { Self.fillRandom($0) }
    }

    /// The next nonce (and a new block once `count` were taken).
    package mutating func take() -> AES.GCM.Nonce {
        if next + 12 > bytes.count {
            bytes.withUnsafeMutableBytes { Self.fillRandom($0) }
            next = 0
        }
        defer { next += 12 }
        // 12 bytes are the nonce's size: the initializer cannot fail.
        return try! AES.GCM.Nonce(data: bytes[next..<next + 12])
    }

    /// `arc4random_buf`: one `getrandom` for the whole block (glibc 2.36 and later, Darwin).
    private static func fillRandom(_ buffer: UnsafeMutableRawBufferPointer) {
        arc4random_buf(buffer.baseAddress!, buffer.count)
    }
}

/// AES-GCM gave no combined box (it always does for its default 12-byte nonce).
package struct MessageSealError: Error, CustomStringConvertible {
    package var description: String { "sealing a message record produced no box" }
}

/// A message record that can be sealed: its token and its content (the APNs payload, the FCM
/// `message` object) go into the box.
package protocol SealableMessage: Sendable {
    var messageId: UUID { get }
    var registrationToken: String { get set }
    /// The APNs payload or the FCM `message` object.
    var content: String { get set }
    var sealing: MessageSealing? { get set }
}

extension SealableMessage {
    /// The record as the planner writes it: sealed under the subject's data key.
    package func sealed(subjectId: UUID, key: [UInt8], nonce: AES.GCM.Nonce = AES.GCM.Nonce()) throws -> Self {
        var copy = self
        copy.sealing = try MessageSealing.seal(
            token: registrationToken, content: content, messageId: messageId, subjectId: subjectId, key: key, nonce: nonce)
        return copy
    }

    /// A sealed record with its token and content filled from the box (which it keeps, so a
    /// retry record carries the same box); nil when `key` does not open it. A record without
    /// `sealing` is returned as it is.
    package func opened(with key: [UInt8]) -> Self? {
        guard let sealing else { return self }
        guard let (token, content) = sealing.open(messageId: messageId, key: key) else { return nil }
        var copy = self
        copy.registrationToken = token
        copy.content = content
        return copy
    }

    /// The token's digest: from the sealing, or computed from the token in clear.
    package var tokenDigest: String { sealing?.tokenDigest ?? TokenDigest.of(registrationToken) }
}

extension APNSMessagePlanned: SealableMessage {
    package var content: String {
        get { payload }
        set { payload = newValue }
    }
}

extension FCMMessagePlanned: SealableMessage {
    package var content: String {
        get { message }
        set { message = newValue }
    }
}
