import Foundation

/// The checks FCM v1 makes on `message` before it accepts a send, with FCM's INVALID_ARGUMENT
/// messages. Returns the accepted message's target on success.
package enum FCMMessageValidator {
    package enum Target: Sendable, Equatable {
        case token(String)
        case topic(String)
        case condition(String)
    }

    package static let payloadLimit = 4096
    package static let topicPayloadLimit = 2048
    package static let maximumTTLSeconds = 2_419_200.0

    package static func validate(_ message: [String: Any]) -> Result<Target, FCMError> {
        let targets: [Target] = [
            (message["token"] as? String).map(Target.token),
            (message["topic"] as? String).map(Target.topic),
            (message["condition"] as? String).map(Target.condition),
        ].compactMap { $0 }
        guard targets.count == 1, let target = targets.first else {
            return .failure(invalid("Exactly one of message.token, message.topic or message.condition must be set."))
        }
        if case .token(let token) = target, token.isEmpty {
            return .failure(invalid("The registration token is not a valid FCM registration token"))
        }

        var payloadBytes = 0
        if let data = message["data"] {
            switch self.checkData(data, field: "message.data") {
            case .failure(let error): return .failure(error)
            case .success(let bytes): payloadBytes += bytes
            }
        }
        if let notification = message["notification"] {
            guard notification is [String: Any] else { return .failure(invalid("Invalid value at 'message.notification'")) }
            payloadBytes += JSON.size(notification)
        }
        if let android = message["android"] {
            guard let android = android as? [String: Any] else { return .failure(invalid("Invalid value at 'message.android'")) }
            if let ttl = android["ttl"], !self.isValidTTL(ttl) {
                return .failure(invalid("Invalid value at 'message.android.ttl' (type.googleapis.com/google.protobuf.Duration), \"\(ttl)\""))
            }
            if let priority = android["priority"] {
                guard let priority = priority as? String, ["normal", "high"].contains(priority.lowercased()) else {
                    return .failure(
                        invalid(
                            "Invalid value at 'message.android.priority' (type.googleapis.com/google.firebase.fcm.v1.AndroidMessagePriority), \"\(priority)\""))
                }
            }
            if let data = android["data"] {
                switch self.checkData(data, field: "message.android.data") {
                case .failure(let error): return .failure(error)
                case .success(let bytes): payloadBytes += bytes
                }
            }
            if let notification = android["notification"] {
                payloadBytes += JSON.size(notification)
            }
        }
        let limit: Int
        if case .token = target { limit = Self.payloadLimit } else { limit = Self.topicPayloadLimit }
        if payloadBytes > limit {
            return .failure(invalid("Message is too big. The payload is \(payloadBytes) bytes; the limit is \(limit)."))
        }
        return .success(target)
    }

    /// Data values must be strings and keys must not be reserved; returns the payload bytes.
    private static func checkData(_ data: Any, field: String) -> Result<Int, FCMError> {
        guard let data = data as? [String: Any] else { return .failure(invalid("Invalid value at '\(field)'")) }
        var bytes = 0
        for (key, value) in data {
            guard let string = value as? String, !(value is NSNumber) else {
                return .failure(invalid("Invalid value at '\(field)[\(key)].value' (TYPE_STRING), \(value)"))
            }
            if self.isReservedKey(key) {
                return .failure(invalid("Invalid data payload key: \(key)"))
            }
            bytes += key.utf8.count + string.utf8.count
        }
        return .success(bytes)
    }

    package static func isReservedKey(_ key: String) -> Bool {
        let lowered = key.lowercased()
        return lowered == "from" || lowered == "message_type" || lowered.hasPrefix("google.") || lowered.hasPrefix("gcm.")
    }

    /// `"<seconds>s"` with up to nine fractional digits, 0 ... 2,419,200 seconds (28 days).
    package static func isValidTTL(_ value: Any) -> Bool {
        guard let text = value as? String, text.hasSuffix("s") else { return false }
        let number = text.dropLast()
        let parts = number.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count),
            !parts[0].isEmpty, parts[0].allSatisfy(\.isASCII), parts[0].allSatisfy(\.isNumber)
        else { return false }
        if parts.count == 2 {
            guard (1...9).contains(parts[1].count), parts[1].allSatisfy(\.isASCII), parts[1].allSatisfy(\.isNumber) else { return false }
        }
        guard let seconds = Double(number) else { return false }
        return seconds >= 0 && seconds <= Self.maximumTTLSeconds
    }

    static func invalid(_ message: String) -> FCMError {
        FCMError(.invalidArgument, message)
    }
}
