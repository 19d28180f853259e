import Foundation
import Hummingbird
import Kafka
import Logging
import Metrics
import NIOCore
import PushEvents
import PushRuntime
import PushStore
import PushWire

/// The request context of the SDK endpoints: Hummingbird's basic context plus the client's
/// address (for the per-address rate limit).
package typealias RegistrationRequestContext = PeerRequestContext

/// `POST /nms/mobile/1/registerIOS.jssp` and `POST /nms/mobile/1/registerAndroid.jssp`, exactly
/// as the Campaign SDKs call them (docs/registration.md). A registration is answered 200 only
/// once its `SubscriptionRegistered` event is stored by the broker; every refusal is a one-line
/// text reason and writes nothing.
package struct RegistrationEndpoints: Sendable {
    let producer: KafkaProducer
    let topic: String
    let directory: AppDirectory
    let keys: PersonalDataKeys
    let settings: RegistrationSettings
    let keyLimiter: RateLimiter
    let addressLimiter: RateLimiter
    let logger: Logger

    package init(producer: KafkaProducer, topic: String, directory: AppDirectory, keys: PersonalDataKeys, settings: RegistrationSettings, logger: Logger) {
        self.keys = keys
        self.producer = producer
        self.topic = topic
        self.directory = directory
        self.settings = settings
        self.keyLimiter = RateLimiter(rate: settings.ratePerKey, burst: settings.burstPerKey)
        self.addressLimiter = RateLimiter(rate: settings.ratePerAddress, burst: settings.burstPerAddress)
        self.logger = logger
    }

    package func addRoutes(to router: Router<RegistrationRequestContext>) {
        for (path, platform) in [("registerIOS.jssp", Platform.ios), ("registerAndroid.jssp", Platform.android)] {
            router.post("/nms/mobile/1/\(path)") { request, context in
                await register(platform: platform, request: request, context: context)
            }
        }
    }

    func register(platform: Platform, request: Request, context: RegistrationRequestContext) async -> Response {
        let outcome: Response
        do {
            try await registerOrThrow(platform: platform, request: request, context: context)
            outcome = Self.text(.ok, "OK")
            Counter(label: "push_registrations_total", dimensions: [("platform", platform.rawValue), ("status", "200")]).increment()
        } catch let refusal as Refusal {
            Counter(label: "push_registrations_total", dimensions: [("platform", platform.rawValue), ("status", String(refusal.error.status))]).increment()
            var response = Self.text(HTTPResponse.Status(code: refusal.error.status), refusal.error.reason)
            if let retryAfter = refusal.retryAfter { response.headers[.retryAfter] = String(retryAfter) }
            outcome = response
        } catch {
            outcome = Self.text(.internalServerError, "unexpected error")
        }
        return outcome
    }

    /// A refusal on its way to the response.
    struct Refusal: Error {
        var error: RegistrationError
        var retryAfter: Int?
    }

    static let forwardedFor = HTTPFields.Element.Name("X-Forwarded-For")!

    private func registerOrThrow(platform: Platform, request: Request, context: RegistrationRequestContext) async throws {
        let address = ClientAddress.resolve(
            peer: context.remoteAddress?.ipAddress ?? "unknown", forwardedFor: request.headers[values: Self.forwardedFor],
            trusted: settings.trustedProxies)
        if let retryAfter = addressLimiter.acquire("address:\(address)") {
            throw Refusal(error: RegistrationError(status: 429, reason: "too many requests from this address"), retryAfter: retryAfter)
        }
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: settings.bodyLimit)
        } catch is NIOTooManyBytesError {
            throw Refusal(error: RegistrationError(status: 413, reason: "body larger than \(settings.bodyLimit) bytes"))
        }
        let registration: DeviceRegistration
        switch Self.parse(body: String(buffer: body), query: request.uri.query ?? "", platform: platform) {
        case .success(let parsed): registration = parsed
        case .failure(let error): throw Refusal(error: error)
        }
        let app: AppEntry?
        do {
            app = try await directory.app(integrationKey: registration.integrationKey)
        } catch {
            logger.error("App catalog lookup failed", metadata: ["error": "\(String(reflecting: error))"])
            throw Refusal(error: RegistrationError(status: 503, reason: "the app catalog is unavailable; retry later"))
        }
        guard let app else { throw Refusal(error: .unknownIntegrationKey()) }
        // The app's budget is taken only for a key the catalog knows: made-up keys neither
        // spend a real app's budget nor make a bucket each (the address limit above bounds them).
        if let retryAfter = keyLimiter.acquire("app:\(app.appId)") {
            throw Refusal(error: RegistrationError(status: 429, reason: "too many registrations for this integration key"), retryAfter: retryAfter)
        }
        guard app.platform == platform else {
            let other = app.platform == .ios ? "registerIOS.jssp" : "registerAndroid.jssp"
            throw Refusal(error: .badRequest("integration key belongs to an \(app.platform == .ios ? "iOS" : "Android") app: use \(other)"))
        }

        let params = app.keptParameters.isEmpty ? registration.params : registration.params.filter { app.keptParameters.contains($0.key) }
        for (name, value) in params {
            if let type = app.parameterTypes[name], !Self.matches(value, type: type) {
                throw Refusal(error: .badRequest("additionalParams \(name) must be \(type == "integer" ? "an integer" : "a \(type)")"))
            }
        }
        let event = SubscriptionRegistered(
            appId: app.appId, integrationKey: app.integrationKey, platform: platform,
            registrationToken: registration.registrationToken, userKey: registration.userKey,
            deviceImei: registration.deviceImei, deviceName: registration.deviceName, deviceModel: registration.deviceModel,
            deviceBrand: registration.deviceBrand, deviceManufacturer: registration.deviceManufacturer,
            osName: registration.osName, osVersion: registration.osVersion, osLanguage: registration.osLanguage,
            params: params, registeredAt: Date()
        )
        // Version 2: the personal fields sealed under the person's (or the device's) data key,
        // keyed by the token's digest, so that an erasure leaves nothing readable.
        let sealed: SealedSubscriptionRegistered
        do {
            sealed = try await keys.sealed(event, serviceId: app.serviceId)
        } catch let error as DataKeyUnwrapError {
            // Not a passing failure: this process lacks the key-encryption key (names no one).
            logger.error("A data key cannot be unwrapped", metadata: ["app.id": "\(app.appId)", "error": "\(error)"])
            throw Refusal(error: RegistrationError(status: 503, reason: "the registration could not be stored in time; retry later"))
        } catch {
            logger.warning("No data key for a registration", metadata: ["app.id": "\(app.appId)", "error": "\(String(reflecting: type(of: error)))"])
            throw Refusal(error: RegistrationError(status: 503, reason: "the registration could not be stored in time; retry later"))
        }
        let envelope = EventEnvelope(key: SealedSubscriptionRegistered.key(appId: app.appId, tokenDigest: sealed.tokenDigest), payload: sealed)
        do {
            try await producer.send(KafkaProducerRecord(topic: topic, event: envelope))
        } catch {
            logger.warning("Registration not stored by the broker", metadata: ["app.id": "\(app.appId)", "error": "\(error)"])
            throw Refusal(error: RegistrationError(status: 503, reason: "the registration could not be stored in time; retry later"))
        }
        logger.debug("Registered", metadata: ["app.id": "\(app.appId)", "platform": "\(platform.rawValue)"])
    }

    /// Whether a parameter value fits its declared type (values are stored as sent).
    static func matches(_ value: String, type: String) -> Bool {
        switch type {
        case "integer": Int64(value) != nil
        case "decimal": Double(value).map { $0.isFinite } ?? false
        case "boolean": ["true", "false", "1", "0"].contains(value.lowercased())
        case "date": (try? Date.ISO8601FormatStyle().year().month().day().parse(String(value.prefix(10)))) != nil
        default: true
        }
    }

    static func parse(body: String, query: String, platform: Platform) -> Result<DeviceRegistration, RegistrationError> {
        Result { () throws(RegistrationError) -> DeviceRegistration in
            let fields = try FormFields(encoded: body).filling(from: try FormFields(encoded: query))
            return try DeviceRegistration(fields: fields, platform: platform)
        }
    }

    static func text(_ status: HTTPResponse.Status, _ line: String) -> Response {
        Response(
            status: status,
            headers: [.contentType: "text/plain; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(string: line + "\n"))
        )
    }
}
