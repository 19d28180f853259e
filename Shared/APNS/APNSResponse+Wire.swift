import Foundation
import NIOCore
import NIOHPACK
import PushWire

extension APNSResponse {
    /// Reads an answer off the wire: `apns-id`, `Retry-After`, and the JSON body's `reason` and
    /// `timestamp` (milliseconds). A body that is not JSON leaves `reason` nil.
    init(status: Int, headers: HPACKHeaders, body: ByteBuffer) {
        self.init(status: status)
        self.apnsId = headers.first(name: HTTPHeaderName.apnsID)
        self.retryAfter = headers.first(name: HTTPHeaderName.retryAfter).flatMap { RetryAfter.delay($0) }
        guard !(200..<300).contains(status), body.readableBytes > 0 else { return }
        struct ErrorBody: Decodable {
            var reason: String?
            var timestamp: Double?
        }
        guard let decoded = try? JSONDecoder().decode(ErrorBody.self, from: Data(body.readableBytesView)) else { return }
        self.reason = decoded.reason.map(APNSReason.init(rawValue:))
        self.timestamp = decoded.timestamp.map { Date(timeIntervalSince1970: $0 / 1000) }
    }

}
