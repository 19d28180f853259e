import PushRuntime
import PushSending

/// The apns-sender service: a member of the `push.apns.messages` + `push.apns.retries` consumer
/// group that sends each iOS message to APNs over HTTP/2 and publishes its outcome on
/// `push.message-results` (docs/senders.md). Operations endpoints on port 9103.
@main
enum APNSSenderMain {
    static func main() async {
        await ServiceRuntime.main(service: "apns-sender", defaultOpsPort: 9103, defaultLingerMilliseconds: 50) { runtime in
            try APNSSenderApplication.build(
                configuration: runtime.configuration, environment: EnvironmentSettings(),
                postgres: runtime.postgres, producer: runtime.producer, logger: runtime.logger
            )
        }
    }
}
