import PushRegistration
import PushRuntime

/// The registration service: the Campaign SDK's registration endpoints (port 8080), the
/// catalog and subscription projections, and the shared operations endpoints (port 9101).
@main
enum RegistrationMain {
    static func main() async {
        await ServiceRuntime.main(service: "registration", defaultOpsPort: 9101) { runtime in
            try RegistrationApplication.build(
                configuration: runtime.configuration,
                settings: try RegistrationSettings(environment: EnvironmentSettings()),
                postgres: runtime.postgres,
                deadLetterProducer: runtime.producer,
                logger: runtime.logger
            )
        }
    }
}
