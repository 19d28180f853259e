import PushRuntime

/// The apns-sender service. Sends iOS messages to APNs, scaled as a consumer group.
///
/// This executable already runs the shared plumbing (configuration, logging, metrics,
/// `/health/live`, `/health/ready`, `/metrics` on port 9103, graceful shutdown); its own
/// work arrives with its issue.
@main
enum APNSSenderMain {
    static func main() async {
        await ServiceRuntime.main(service: "apns-sender", defaultOpsPort: 9103)
    }
}
