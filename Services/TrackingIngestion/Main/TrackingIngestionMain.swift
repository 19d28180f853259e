import PushRuntime
import PushTracking

/// The tracking-ingestion service: the SDK's tracking URL `GET /r/?id=…` (port 8081), which
/// turns each hit into a `TrackingHitRecorded` event on `push.tracking`, the `tracking_log`
/// projection, and the shared operations endpoints (port 9105).
@main
enum TrackingIngestionMain {
    static func main() async {
        await ServiceRuntime.main(service: "tracking-ingestion", defaultOpsPort: 9105) { runtime in
            try TrackingApplication.build(
                configuration: runtime.configuration,
                settings: try TrackingSettings(environment: EnvironmentSettings()),
                postgres: runtime.postgres,
                deadLetterProducer: runtime.producer,
                logger: runtime.logger
            )
        }
    }
}
