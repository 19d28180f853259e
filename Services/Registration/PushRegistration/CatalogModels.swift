import Foundation
import PushEvents

/// Body of `POST /admin/v1/services` and `PUT /admin/v1/services/{name}`.
package struct ServiceInput: Codable, Sendable {
    package var name: String?
    package var label: String
}

/// A service as the admin API shows it.
package struct ServiceOutput: Codable, Sendable, Equatable {
    package var serviceId: UUID
    package var name: String
    package var label: String
}

/// Body of `POST /admin/v1/services/{name}/apps` and `PUT /admin/v1/apps/{appId}`.
package struct AppInput: Codable, Sendable {
    package var platform: String
    package var label: String
    package var integrationKey: String?
    package var environment: String?
    package var bundleId: String?
    package var fcmProjectId: String?
    package var variables: [String]?
    package var sounds: [AppDefined.Sound]?
    package var subscriptionParameters: [AppDefined.SubscriptionParameter]?
}

/// An app as the admin API shows it (the `AppDefined` fields plus the service's name).
package struct AppOutput: Codable, Sendable, Equatable {
    package var appId: UUID
    package var serviceId: UUID
    package var serviceName: String
    package var platform: Platform
    package var integrationKey: String
    package var label: String
    package var environment: String
    package var bundleId: String?
    package var fcmProjectId: String?
    package var variables: [String]
    package var sounds: [AppDefined.Sound]
    package var subscriptionParameters: [AppDefined.SubscriptionParameter]
}

/// Validation of admin input; each failure is a 400 naming the field.
enum CatalogValidation {
    static let parameterTypes: Set<String> = ["string", "integer", "decimal", "boolean", "date"]
    /// Payload keys the SDKs or FCM reserve: an application variable cannot take these names.
    static let reservedVariables: Set<String> = ["_mId", "_dId", "_msg", "_iNm", "title", "subtitle", "aps", "from", "message_type", "collapse_key"]

    static func serviceName(_ name: String) throws(RegistrationError) {
        guard (1...64).contains(name.count),
            name.unicodeScalars.allSatisfy({ CharacterSet.alphanumerics.contains($0) && $0.isASCII || "_.-".unicodeScalars.contains($0) })
        else {
            throw .badRequest("name must be 1 to 64 characters among letters, digits, '_', '.', '-'")
        }
    }

    static func label(_ label: String) throws(RegistrationError) {
        guard !label.trimmingCharacters(in: .whitespaces).isEmpty, label.count <= 200 else {
            throw .badRequest("label must be 1 to 200 characters")
        }
    }

    /// Checks an app and fills its defaults.
    static func app(_ input: AppInput, appId: UUID, serviceId: UUID) throws(RegistrationError) -> AppDefined {
        guard let platform = Platform(rawValue: input.platform) else { throw .badRequest("platform must be ios or android") }
        try label(input.label)
        let environment = input.environment ?? "production"
        guard environment == "production" || (platform == .ios && environment == "sandbox") else {
            throw .badRequest(platform == .ios ? "environment must be sandbox or production" : "environment of an Android app must be production")
        }
        let key = input.integrationKey ?? UUID().uuidString.lowercased()
        guard (1...128).contains(key.count), key.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) else {
            throw .badRequest("integrationKey must be 1 to 128 printable ASCII characters without spaces")
        }
        if platform == .ios {
            guard let bundleId = input.bundleId, !bundleId.isEmpty, bundleId.count <= 155,
                bundleId.unicodeScalars.allSatisfy({ CharacterSet.alphanumerics.contains($0) && $0.isASCII || "-.".unicodeScalars.contains($0) })
            else { throw .badRequest("bundleId (the APNs topic) is required for an iOS app: letters, digits, '-' and '.'") }
        } else {
            guard let project = input.fcmProjectId, !project.isEmpty, project.count <= 64 else {
                throw .badRequest("fcmProjectId is required for an Android app")
            }
        }
        let variables = input.variables ?? []
        for variable in variables {
            guard !reservedVariables.contains(variable), !variable.hasPrefix("google."), !variable.hasPrefix("gcm.") else {
                throw .badRequest("variable name \(variable) is reserved by the SDK or the provider")
            }
            guard let first = variable.unicodeScalars.first, CharacterSet.letters.contains(first) || first == "_",
                variable.count <= 64, variable.unicodeScalars.allSatisfy({ CharacterSet.alphanumerics.contains($0) && $0.isASCII || $0 == "_" })
            else { throw .badRequest("variable names must start with a letter or '_' and hold letters, digits, '_'") }
        }
        guard Set(variables).count == variables.count else { throw .badRequest("variables must be unique") }
        let sounds = input.sounds ?? []
        guard sounds.allSatisfy({ !$0.name.isEmpty && !$0.label.isEmpty }) else { throw .badRequest("every sound needs a name and a label") }
        let parameters = input.subscriptionParameters ?? []
        guard parameters.allSatisfy({ !$0.name.isEmpty && parameterTypes.contains($0.type) }) else {
            throw .badRequest("subscription parameters need a name and a type among \(parameterTypes.sorted().joined(separator: ", "))")
        }
        return AppDefined(
            appId: appId, serviceId: serviceId, platform: platform, integrationKey: key, label: input.label,
            environment: environment, bundleId: platform == .ios ? input.bundleId : nil,
            fcmProjectId: platform == .android ? input.fcmProjectId : nil,
            variables: variables, sounds: sounds, subscriptionParameters: parameters
        )
    }
}
