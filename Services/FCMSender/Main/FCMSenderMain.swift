import PushRuntime
import PushSending

/// The fcm-sender service: a member of the `push.fcm.messages` + `push.fcm.retries` consumer
/// group that sends each Android message through FCM HTTP v1 and publishes its outcome on
/// `push.message-results` (docs/senders.md). Operations endpoints on port 9104.
@main
enum FCMSenderMain {
    static func main() async {
        await ServiceRuntime.main(service: "fcm-sender", defaultOpsPort: 9104, defaultLingerMilliseconds: 50) { runtime in
            try FCMSenderApplication.build(
                configuration: runtime.configuration, environment: EnvironmentSettings(),
                postgres: runtime.postgres, producer: runtime.producer, logger: runtime.logger
            )
        }
    }
}
