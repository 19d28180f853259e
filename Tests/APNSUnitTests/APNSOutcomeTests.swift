import APNS
import Foundation
import Testing

@Suite("APNs answers classified per the reference table")
struct APNSOutcomeTests {
    static let invalidSince = Date(timeIntervalSince1970: 1_700_000_000)

    /// (status, reason, expected outcome) for every documented reason.
    static let table: [(Int, APNSReason, APNSOutcome)] = [
        (400, .badDeviceToken, .tokenInvalid(reason: .badDeviceToken, invalidSince: nil)),
        (400, .deviceTokenNotForTopic, .tokenInvalid(reason: .deviceTokenNotForTopic, invalidSince: nil)),
        (400, .badCollapseId, .rejected(reason: .badCollapseId)),
        (400, .badExpirationDate, .rejected(reason: .badExpirationDate)),
        (400, .badMessageId, .rejected(reason: .badMessageId)),
        (400, .badPriority, .rejected(reason: .badPriority)),
        (400, .badTopic, .rejected(reason: .badTopic)),
        (400, .duplicateHeaders, .rejected(reason: .duplicateHeaders)),
        (400, .idleTimeout, .retry(reason: .idleTimeout, after: nil)),
        (400, .invalidPushType, .rejected(reason: .invalidPushType)),
        (400, .missingDeviceToken, .rejected(reason: .missingDeviceToken)),
        (400, .missingTopic, .rejected(reason: .missingTopic)),
        (400, .payloadEmpty, .rejected(reason: .payloadEmpty)),
        (400, .topicDisallowed, .rejected(reason: .topicDisallowed)),
        (403, .badCertificate, .credentialRejected(reason: .badCertificate)),
        (403, .badCertificateEnvironment, .credentialRejected(reason: .badCertificateEnvironment)),
        (403, .expiredProviderToken, .credentialRejected(reason: .expiredProviderToken)),
        (403, .forbidden, .credentialRejected(reason: .forbidden)),
        (403, .invalidProviderToken, .credentialRejected(reason: .invalidProviderToken)),
        (403, .missingProviderToken, .credentialRejected(reason: .missingProviderToken)),
        (403, .unrelatedKeyIdInToken, .retry(reason: .unrelatedKeyIdInToken, after: nil)),
        (403, .badEnvironmentKeyIdInToken, .credentialRejected(reason: .badEnvironmentKeyIdInToken)),
        (404, .badPath, .rejected(reason: .badPath)),
        (405, .methodNotAllowed, .rejected(reason: .methodNotAllowed)),
        (410, .expiredToken, .tokenInvalid(reason: .expiredToken, invalidSince: Self.invalidSince)),
        (410, .unregistered, .tokenInvalid(reason: .unregistered, invalidSince: Self.invalidSince)),
        (413, .payloadTooLarge, .rejected(reason: .payloadTooLarge)),
        (429, .tooManyProviderTokenUpdates, .rejected(reason: .tooManyProviderTokenUpdates)),
        (429, .tooManyRequests, .retry(reason: .tooManyRequests, after: nil)),
        (500, .internalServerError, .retry(reason: .internalServerError, after: nil)),
        (503, .serviceUnavailable, .retry(reason: .serviceUnavailable, after: nil)),
        (503, .shutdown, .retry(reason: .shutdown, after: nil)),
    ]

    @Test("every documented reason maps to its outcome", arguments: Self.table.indices)
    func documentedReason(index: Int) {
        let (status, reason, expected) = Self.table[index]
        let response = APNSResponse(
            status: status,
            reason: reason,
            timestamp: status == 410 ? Self.invalidSince : nil
        )
        #expect(response.outcome == expected, "\(status) \(reason)")
    }

    @Test("the table covers every documented reason")
    func tableIsComplete() {
        #expect(Set(Self.table.map(\.1)) == APNSReason.documented)
        #expect(APNSReason.documented.count == 32)
    }

    @Test("200 is sent with the echoed apns-id")
    func accepted() {
        #expect(APNSResponse(status: 200, apnsId: "abc").outcome == .sent(apnsId: "abc"))
    }

    @Test("Retry-After is carried into retry outcomes")
    func retryAfter() {
        let response = APNSResponse(status: 429, reason: .tooManyRequests, retryAfter: .seconds(7))
        #expect(response.outcome == .retry(reason: .tooManyRequests, after: .seconds(7)))
        let unavailable = APNSResponse(status: 503, reason: .serviceUnavailable, retryAfter: .seconds(30))
        #expect(unavailable.outcome == .retry(reason: .serviceUnavailable, after: .seconds(30)))
    }

    @Test("an unknown reason falls back on its status and is kept verbatim")
    func unknownReason() {
        let novel = APNSReason(rawValue: "SomethingNew")
        #expect(!novel.isDocumented)
        #expect(novel.description == "SomethingNew")
        #expect(APNSResponse(status: 400, reason: novel).outcome == .rejected(reason: novel))
        #expect(APNSResponse(status: 403, reason: novel).outcome == .credentialRejected(reason: novel))
        #expect(
            APNSResponse(status: 410, reason: novel, timestamp: Self.invalidSince).outcome
                == .tokenInvalid(reason: novel, invalidSince: Self.invalidSince)
        )
        #expect(APNSResponse(status: 429, reason: novel).outcome == .retry(reason: novel, after: nil))
        #expect(APNSResponse(status: 502, reason: novel, retryAfter: .seconds(3)).outcome == .retry(reason: novel, after: .seconds(3)))
    }

    @Test("an unknown status without a reason: 5xx retries, anything else is rejected")
    func unknownStatus() {
        #expect(APNSResponse(status: 599).outcome == .retry(reason: nil, after: nil))
        #expect(APNSResponse(status: 418).outcome == .rejected(reason: APNSReason(rawValue: "")))
        #expect(APNSResponse(status: 302).outcome == .rejected(reason: APNSReason(rawValue: "")))
    }

    @Test("a known reason decides even under an unexpected status")
    func reasonBeatsStatus() {
        #expect(APNSResponse(status: 500, reason: .unregistered).outcome == .tokenInvalid(reason: .unregistered, invalidSince: nil))
    }
}
