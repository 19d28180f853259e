import PushCredentials
import PushRegistration
import PushRuntime

/// The registration service: the Campaign SDK's registration endpoints and the admin API
/// (port 8080), the catalog and subscription projections, and the shared operations endpoints
/// (port 9101).
@main
enum RegistrationMain {
    static func main() async {
        await ServiceRuntime.main(service: "registration", defaultOpsPort: 9101) { runtime in
            let environment = EnvironmentSettings()
            return try RegistrationApplication.build(
                configuration: runtime.configuration,
                settings: try RegistrationSettings(environment: environment),
                postgres: runtime.postgres,
                deadLetterProducer: runtime.producer,
                adminToken: try AdminToken.fromEnvironment(environment.values),
                credentialCipher: try CredentialCipher.fromEnvironment(environment.values),
                dataKeys: try CredentialCipher.dataKeys(fromEnvironment: environment.values),
                logger: runtime.logger,
                projections: .init(environment: environment)
            )
        }
    }
}
