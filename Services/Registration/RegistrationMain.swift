import PushRuntime

/// The registration service. Receives the Campaign SDK's registrations and the admin API.
///
/// This executable already runs the shared plumbing (configuration, logging, metrics,
/// `/health/live`, `/health/ready`, `/metrics` on port 9101, graceful shutdown); its own
/// work arrives with its issue.
@main
enum RegistrationMain {
    static func main() async {
        await ServiceRuntime.main(service: "registration", defaultOpsPort: 9101)
    }
}
