import PushRuntime

/// The fcm-sender service. Sends Android messages to FCM, scaled as a consumer group.
///
/// This executable already runs the shared plumbing (configuration, logging, metrics,
/// `/health/live`, `/health/ready`, `/metrics` on port 9104, graceful shutdown); its own
/// work arrives with its issue.
@main
enum FCMSenderMain {
    static func main() async {
        await ServiceRuntime.main(service: "fcm-sender", defaultOpsPort: 9104)
    }
}
