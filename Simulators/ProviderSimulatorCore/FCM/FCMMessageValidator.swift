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
                if case .failure(let error) = self.checkAndroidNotification(notification) { return .failure(error) }
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

    /// The fields of FCM v1's `AndroidNotification`, by their proto names; FCM's JSON parser
    /// also takes each in lowerCamelCase.
    static let androidNotificationFields: Set<String> = {
        let names = [
            "title", "body", "icon", "color", "sound", "tag", "click_action", "body_loc_key", "body_loc_args", "title_loc_key", "title_loc_args",
            "channel_id", "ticker", "sticky", "event_time", "local_only", "notification_priority", "default_sound", "default_vibrate_timings",
            "default_light_settings", "vibrate_timings", "visibility", "notification_count", "light_settings", "image", "bypass_proxy_notification",
            "proxy",
        ]
        let camel = names.map { name in
            let parts = name.split(separator: "_")
            return String(parts[0]) + parts.dropFirst().map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
        }
        return Set(names + camel)
    }()

    /// `android.notification`: an object of known fields (FCM refuses an unknown name), its
    /// `color` in `#rrggbb` form.
    static func checkAndroidNotification(_ value: Any) -> Result<Void, FCMError> {
        guard let notification = value as? [String: Any] else { return .failure(invalid("Invalid value at 'message.android.notification'")) }
        for key in notification.keys.sorted() where !androidNotificationFields.contains(key) {
            return .failure(invalid("Invalid JSON payload received. Unknown name \"\(key)\" at 'message.android.notification': Cannot find field."))
        }
        if let color = notification["color"] {
            let text = color as? String ?? ""
            let hex = text.utf8.dropFirst()
            guard text.first == "#", hex.count == 6, hex.allSatisfy({ $0 < 0x80 && Character(UnicodeScalar($0)).isHexDigit }) else {
                return .failure(invalid("Invalid value at 'message.android.notification.color': the color must be in the form #rrggbb"))
            }
        }
        return .success(())
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
