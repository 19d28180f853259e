import Foundation

/// The `Retry-After` header (RFC 9110, section 10.2.3), as FCM sends it on 429 and 5xx and APNs
/// with some 429s: delta-seconds, or an HTTP date in any of the three forms RFC 9110 lets a
/// recipient meet (IMF-fixdate, RFC 850, asctime).
package enum RetryAfter {
    /// The delay the value asks for, counted from `now`; never negative; nil when the value is
    /// neither form.
    package static func delay(_ value: String, now: Date = Date()) -> Duration? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Int64(trimmed) { return .seconds(max(0, seconds)) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        for format in ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"] {
            formatter.dateFormat = format
            if let date = formatter.date(from: trimmed) {
                return .seconds(max(0, Int64(date.timeIntervalSince(now).rounded(.up))))
            }
        }
        return nil
    }
}
