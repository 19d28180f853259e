import PushCredentials
import PushPlanning
import PushRuntime

/// The delivery-planning service: reads `push.delivery-requests`, plans each accepted delivery
/// into one message per device on the APNs and FCM message topics, and keeps the analysts'
/// `deliveries`, `exclusion_log` and `broad_log` tables; serves the deliveries' admin API on
/// port 8082. Operations endpoints on port 9102.
@main
enum DeliveryPlanningMain {
    static func main() async {
        await ServiceRuntime.main(service: "delivery-planning", defaultOpsPort: 9102) { runtime in
            let environment = EnvironmentSettings()
            return try PlanningApplication.build(
                configuration: runtime.configuration,
                settings: try PlanningSettings(environment: environment),
                postgres: runtime.postgres,
                producer: runtime.producer,
                adminToken: try AdminToken.fromEnvironment(environment.values),
                dataKeys: try CredentialCipher.dataKeys(fromEnvironment: environment.values),
                logger: runtime.logger,
                groups: .init(environment: environment)
            )
        }
    }
}
