import Crypto
import Foundation
import PushEvents
import PushRegistration
import Testing

/// The sealing of version-2 registrations (crypto-shredding): what opens and what does not.
@Suite("Personal data sealed per person")
struct PersonalDataKeysTests {
    static let registration = SubscriptionRegistered(
        appId: UUID(), integrationKey: "key", platform: .android, registrationToken: "fcm-token:APA91b-abc_def", userKey: "alice@example.com",
        deviceImei: "356938035643809", deviceName: "Pixel", deviceModel: "8", deviceBrand: "Google", deviceManufacturer: "Google", osName: "Android",
        osVersion: "15", osLanguage: "pt-PT", params: ["city": "Lisbon"], registeredAt: Date(timeIntervalSince1970: 1_790_000_000))

    @Test("sealed, the event holds no personal field; opened with its key, it is the registration again")
    func roundTrip() throws {
        let key = SymmetricKey(size: .bits256)
        let sealed = try PersonalDataKeys.seal(Self.registration, subjectId: UUID(), key: key)
        let wire = String(decoding: try EventEnvelope(key: "k", payload: sealed).encoded(), as: UTF8.self)
        for secret in ["fcm-token", "alice@example.com", "356938035643809", "Pixel", "Lisbon", "pt-PT"] {
            #expect(!wire.contains(secret), "\(secret) on the wire")
        }
        #expect(sealed.tokenDigest == PersonalDataKeys.tokenDigest(Self.registration.registrationToken))
        #expect(sealed.tokenDigest.count == 64 && sealed.tokenDigest == sealed.tokenDigest.lowercased())
        #expect(PersonalDataKeys.open(sealed, key: key) == Self.registration)
    }

    @Test("another key (the person's was destroyed), another device's event or an altered box does not open")
    func refusals() throws {
        let key = SymmetricKey(size: .bits256)
        let sealed = try PersonalDataKeys.seal(Self.registration, subjectId: UUID(), key: key)
        #expect(PersonalDataKeys.open(sealed, key: SymmetricKey(size: .bits256)) == nil)
        var moved = sealed
        moved.tokenDigest = PersonalDataKeys.tokenDigest("another-token")
        #expect(PersonalDataKeys.open(moved, key: key) == nil, "bound to the app and the token's digest")
        var otherApp = sealed
        otherApp.appId = UUID()
        #expect(PersonalDataKeys.open(otherApp, key: key) == nil)
        var altered = sealed
        var bytes = Array(Data(base64Encoded: sealed.sealed)!)
        bytes[20] ^= 1
        altered.sealed = Data(bytes).base64EncodedString()
        #expect(PersonalDataKeys.open(altered, key: key) == nil)
    }

    @Test("the digest is SHA-256 of the token's UTF-8 bytes, as push.token_digest computes it")
    func digest() {
        #expect(PersonalDataKeys.tokenDigest("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            PersonalDataKeys.subject(userKey: "", appId: UUID(uuidString: "00000000-0000-0000-0000-000000000001")!, tokenDigest: "d")
                == "device:00000000-0000-0000-0000-000000000001:d")
        #expect(PersonalDataKeys.subject(userKey: "u", appId: UUID(), tokenDigest: "d") == "user:u")
    }
}
