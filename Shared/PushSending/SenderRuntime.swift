import Foundation
import PushRegistration
import PushRuntime
import PushStore
import ServiceLifecycle

/// Settings both senders read the same way.
enum SenderRuntime {
    /// The credential cipher: the senders cannot work without `PUSH_CREDENTIALS_KEY`.
    static func cipher(_ environment: EnvironmentSettings) throws -> CredentialCipher {
        guard let cipher = try CredentialCipher.fromEnvironment(environment.values) else {
            throw ConfigurationError("PUSH_CREDENTIALS_KEY (or PUSH_CREDENTIALS_KEY_FILE) is required: the sender decrypts the apps' provider credentials with it")
        }
        return cipher
    }

    /// The PEM text of a CA file setting, nil when the setting is empty (system roots).
    static func caFile(_ path: String, setting: String) throws -> String? {
        guard !path.isEmpty else { return nil }
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8),
              text.contains("-----BEGIN CERTIFICATE-----")
        else {
            throw ConfigurationError("\(setting) must name a readable PEM certificate file, got \"\(path)\"")
        }
        return text
    }
}

/// Runs `action` when the service group stops this service (after the services listed after it).
struct ShutdownAction: Service {
    let action: @Sendable () async throws -> Void

    init(_ action: @escaping @Sendable () async throws -> Void) {
        self.action = action
    }

    func run() async throws {
        try? await gracefulShutdown()
        try await action()
    }
}
