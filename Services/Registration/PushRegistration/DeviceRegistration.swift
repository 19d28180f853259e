import PushEvents

/// One registration as the Campaign SDK sends it, validated.
///
/// Field names follow the SDK's form parameters (`../shared/reference/campaign-sdk-protocol.md`).
package struct DeviceRegistration: Sendable, Hashable, Codable {
    package var platform: Platform
    /// `mobileAppUuid`: the app's integration key.
    package var integrationKey: String
    /// iOS: the APNs token as lowercase hex; Android: the FCM token as sent.
    package var registrationToken: String
    /// Reconciliation key; empty when the app has none.
    package var userKey: String
    /// Android only (legacy name): a device id.
    package var deviceImei: String?
    package var deviceName: String
    package var deviceModel: String
    package var deviceBrand: String
    package var deviceManufacturer: String
    package var osName: String
    package var osVersion: String
    package var osLanguage: String
    /// `additionalParams`, decoded.
    package var params: [String: String]

    /// The longest tokens accepted: APNs tokens are hex (32 bytes today, variable by contract),
    /// FCM tokens are opaque printable strings.
    package static let maximumAPNsTokenLength = 200
    package static let maximumFCMTokenLength = 4096

    /// Validates a registration from its form fields.
    package init(fields: FormFields, platform: Platform) throws(RegistrationError) {
        self.platform = platform
        let key = fields["mobileAppUuid"] ?? ""
        guard !key.isEmpty else { throw .badRequest("mobileAppUuid (the integration key) is missing or empty") }
        guard key.count <= 200, key.unicodeScalars.allSatisfy(Self.isPrintable) else {
            throw .badRequest("mobileAppUuid (the integration key) is not a valid key")
        }
        integrationKey = key
        let token = fields["registrationToken"] ?? ""
        guard !token.isEmpty else { throw .badRequest("registrationToken is missing or empty") }
        switch platform {
        case .ios:
            guard token.count <= Self.maximumAPNsTokenLength, token.count.isMultiple(of: 2),
                token.unicodeScalars.allSatisfy(\.properties.isASCIIHexDigit)
            else {
                throw .badRequest("registrationToken is not an APNs device token (even-length hex, at most \(Self.maximumAPNsTokenLength) characters)")
            }
            registrationToken = token.lowercased()
        case .android:
            guard token.utf8.count <= Self.maximumFCMTokenLength, token.unicodeScalars.allSatisfy(Self.isPrintable), !token.contains(" ") else {
                throw .badRequest("registrationToken is not an FCM registration token (printable, no spaces, at most \(Self.maximumFCMTokenLength) bytes)")
            }
            registrationToken = token
        }
        userKey = fields["userKey"] ?? ""
        deviceImei = platform == .android ? fields["deviceImei"] : nil
        deviceName = fields["deviceName"] ?? ""
        deviceModel = fields["deviceModel"] ?? ""
        deviceBrand = fields["deviceBrand"] ?? ""
        deviceManufacturer = fields["deviceManufacturer"] ?? ""
        osName = fields["osName"] ?? ""
        osVersion = fields["osVersion"] ?? ""
        osLanguage = fields["osLanguage"] ?? ""
        for (name, value) in [("userKey", userKey), ("deviceName", deviceName), ("deviceModel", deviceModel), ("osVersion", osVersion)]
        where value.utf8.count > 1024 {
            throw .badRequest("\(name) is longer than 1024 bytes")
        }
        params = try AdditionalParams.parse(fields["additionalParams"] ?? "")
    }

    static func isPrintable(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value >= 0x20 && scalar.value != 0x7F
    }
}
