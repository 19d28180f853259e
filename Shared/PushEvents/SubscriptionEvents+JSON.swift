import Foundation

// The hand-written JSON of a version-2 registration and of the personal fields it seals (see
// EventJSONWriter.swift and EventJSONReader.swift): written once per registration by the
// registration service and read once per registration by the subscription projection, where
// Foundation's JSONEncoder and JSONDecoder were 8 % and 6 % of the service's profile
// (docs/benchmarks.md, "Registrations per second"). Members in sorted key order.

extension SealedSubscriptionRegistered: EventJSONWritable, EventJSONReadable {
    package func writeMembers(to writer: inout EventJSONWriter) {
        writer.uuid("appId", appId)
        writer.string("integrationKey", integrationKey)
        writer.string("platform", platform.rawValue)
        writer.date("registeredAt", registeredAt)
        writer.string("sealed", sealed)
        writer.uuid("subjectId", subjectId)
        writer.string("tokenDigest", tokenDigest)
    }

    package init(reading reader: inout EventJSONReader) throws(EventJSONReader.Unsupported) {
        var appId: UUID?
        var integrationKey: String?
        var platform: Platform?
        var registeredAt: Date?
        var sealed: String?
        var subjectId: UUID?
        var tokenDigest: String?
        try reader.members { reader, key throws(EventJSONReader.Unsupported) in
            switch key {
            case "appId": try EventJSONReader.once(&appId, try reader.uuid())
            case "integrationKey": try EventJSONReader.once(&integrationKey, try reader.string())
            case "platform": try EventJSONReader.once(&platform, try EventJSONReader.required(Platform(rawValue: try reader.string())))
            case "registeredAt": try EventJSONReader.once(&registeredAt, try reader.date())
            case "sealed": try EventJSONReader.once(&sealed, try reader.string())
            case "subjectId": try EventJSONReader.once(&subjectId, try reader.uuid())
            case "tokenDigest": try EventJSONReader.once(&tokenDigest, try reader.string())
            default: try reader.skipValue()
            }
        }
        self.init(
            appId: try EventJSONReader.required(appId), integrationKey: try EventJSONReader.required(integrationKey),
            platform: try EventJSONReader.required(platform), subjectId: try EventJSONReader.required(subjectId),
            tokenDigest: try EventJSONReader.required(tokenDigest), sealed: try EventJSONReader.required(sealed),
            registeredAt: try EventJSONReader.required(registeredAt))
    }
}

extension SubscriptionPersonalFields {
    /// The JSON that is sealed. Older registrations sealed `JSONEncoder()`'s output (members in
    /// declaration order, `/` escaped): `init(json:)` reads both.
    package var json: [UInt8] {
        var writer = EventJSONWriter(capacity: 384)
        writer.object { writer in
            writer.string("deviceBrand", deviceBrand)
            writer.string("deviceImei", deviceImei)
            writer.string("deviceManufacturer", deviceManufacturer)
            writer.string("deviceModel", deviceModel)
            writer.string("deviceName", deviceName)
            writer.string("osLanguage", osLanguage)
            writer.string("osName", osName)
            writer.string("osVersion", osVersion)
            writer.object("params") { writer in
                for key in params.keys.sorted() { writer.string(key: key, params[key]!) }
            }
            writer.string("registrationToken", registrationToken)
            writer.string("userKey", userKey)
        }
        return writer.bytes
    }

    /// Reads the sealed JSON: the hand-written reader, or `JSONDecoder` for what it leaves (escapes
    /// in keys, duplicate members). Nil when neither reads it.
    package init?(json: [UInt8]) {
        var reader = EventJSONReader(json)
        if let fields = try? Self(reading: &reader), (try? reader.end()) != nil {
            self = fields
        } else if let fields = try? JSONDecoder().decode(Self.self, from: Data(json)) {
            self = fields
        } else {
            return nil
        }
    }

    package init(
        registrationToken: String, userKey: String, deviceImei: String?, deviceName: String, deviceModel: String, deviceBrand: String,
        deviceManufacturer: String, osName: String, osVersion: String, osLanguage: String, params: [String: String]
    ) {
        self.registrationToken = registrationToken
        self.userKey = userKey
        self.deviceImei = deviceImei
        self.deviceName = deviceName
        self.deviceModel = deviceModel
        self.deviceBrand = deviceBrand
        self.deviceManufacturer = deviceManufacturer
        self.osName = osName
        self.osVersion = osVersion
        self.osLanguage = osLanguage
        self.params = params
    }

    init(reading reader: inout EventJSONReader) throws(EventJSONReader.Unsupported) {
        var registrationToken: String?
        var userKey: String?
        var deviceImei: String??
        var deviceName: String?
        var deviceModel: String?
        var deviceBrand: String?
        var deviceManufacturer: String?
        var osName: String?
        var osVersion: String?
        var osLanguage: String?
        var params: [String: String]?
        try reader.members { reader, key throws(EventJSONReader.Unsupported) in
            switch key {
            case "registrationToken": try EventJSONReader.once(&registrationToken, try reader.string())
            case "userKey": try EventJSONReader.once(&userKey, try reader.string())
            case "deviceImei": try EventJSONReader.once(&deviceImei, try reader.optionalString())
            case "deviceName": try EventJSONReader.once(&deviceName, try reader.string())
            case "deviceModel": try EventJSONReader.once(&deviceModel, try reader.string())
            case "deviceBrand": try EventJSONReader.once(&deviceBrand, try reader.string())
            case "deviceManufacturer": try EventJSONReader.once(&deviceManufacturer, try reader.string())
            case "osName": try EventJSONReader.once(&osName, try reader.string())
            case "osVersion": try EventJSONReader.once(&osVersion, try reader.string())
            case "osLanguage": try EventJSONReader.once(&osLanguage, try reader.string())
            case "params": try EventJSONReader.once(&params, try reader.stringMembers())
            default: try reader.skipValue()
            }
        }
        self.init(
            registrationToken: try EventJSONReader.required(registrationToken), userKey: try EventJSONReader.required(userKey),
            deviceImei: deviceImei ?? nil, deviceName: try EventJSONReader.required(deviceName),
            deviceModel: try EventJSONReader.required(deviceModel), deviceBrand: try EventJSONReader.required(deviceBrand),
            deviceManufacturer: try EventJSONReader.required(deviceManufacturer), osName: try EventJSONReader.required(osName),
            osVersion: try EventJSONReader.required(osVersion), osLanguage: try EventJSONReader.required(osLanguage),
            params: try EventJSONReader.required(params))
    }
}
