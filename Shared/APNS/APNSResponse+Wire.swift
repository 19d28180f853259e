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
        self.retryAfter = headers.first(name: HTTPHeaderName.retryAfter).flatMap(Self.retryAfter)
        guard !(200..<300).contains(status), body.readableBytes > 0 else { return }
        struct ErrorBody: Decodable {
            var reason: String?
            var timestamp: Double?
        }
        guard let decoded = try? JSONDecoder().decode(ErrorBody.self, from: Data(body.readableBytesView)) else { return }
        self.reason = decoded.reason.map(APNSReason.init(rawValue:))
        self.timestamp = decoded.timestamp.map { Date(timeIntervalSince1970: $0 / 1000) }
    }

    /// `Retry-After` as delta-seconds, or as an HTTP date (the time left until it).
    static func retryAfter(_ value: String) -> Duration? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Int64(trimmed) { return .seconds(max(0, seconds)) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: trimmed) else { return nil }
        return .seconds(max(0, Int64(date.timeIntervalSinceNow.rounded(.up))))
    }
}
