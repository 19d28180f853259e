/// The literal registration requests of the Campaign SDKs' own tests
/// (reference/campaign-sdk-protocol.md): the registration service's parsing unit tests read them,
/// its endpoint integration tests post them.
package enum SDKRegistrationBody {
    /// The iOS SDK's body: integration key `integrationKey`, token `70757368546f6b656e`.
    package static let ios =
        "registrationToken=70757368546f6b656e&mobileAppUuid=integrationKey&userKey=userkey&deviceName=My%20iPhone&deviceModel=iPhone&deviceBrand=Apple&deviceManufacturer=Apple&osName=iOS&osVersion=iOS%2017.0&osLanguage=en-US&additionalParams=%3CadditionalParams%3E%3Cparam%20name%3D%22email%22%20value%3D%22email%40email.com%22%20%2F%3E%3Cparam%20name%3D%22userPoints%22%20value%3D%223233%22%20%2F%3E%3C%2FadditionalParams%3E"
    /// The Android SDK's body: integration key `testIntegrationKey`, token `testToken`.
    package static let android =
        "registrationToken=testToken&mobileAppUuid=testIntegrationKey&userKey=testUser&deviceImei=12345&deviceName=mockDevice&deviceModel=mockDeviceName&deviceBrand=mockDeviceBrand&deviceManufacturer=mockDeviceManufacturer&osName=android&osVersion=mockOSName%20mockOSVersion&osLanguage=mocklocale&additionalParams=%3CadditionalParameters%3E%3Cparam%20name%3D%22key%22%20value%3D%22value%22%2F%3E%3C%2FadditionalParameters%3E"
}
