import Crypto
import Foundation

/// Message ids are a function of (delivery, app, token): planning the same delivery again after
/// a crash produces the same ids, which is how already-published messages are recognised.
package enum MessageIdentity {
    /// A UUID (version 8, "custom") from SHA-256 of the delivery, app and token.
    package static func messageId(deliveryId: String, appId: UUID, registrationToken: String) -> UUID {
        var hasher = SHA256()
        hasher.update(data: Array("push-message:\(deliveryId):".utf8))
        withUnsafeBytes(of: appId.uuid) { hasher.update(bufferPointer: $0) }
        hasher.update(data: Array(registrationToken.utf8))
        let digest = Array(hasher.finalize())
        var bytes = Array(digest.prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x80
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }
}
