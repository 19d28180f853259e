/// The two mobile platforms, as every event, table and topic names them (`ios`, `android`).
/// Compare with the cases, never with strings; `rawValue` is the wire and database form.
package enum Platform: String, Sendable, Hashable, Codable, CaseIterable {
    /// Apple's platforms: notifications go through APNs (`push.apns.messages`).
    case ios
    /// Android: notifications go through FCM (`push.fcm.messages`).
    case android
}
