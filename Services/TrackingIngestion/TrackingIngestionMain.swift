import PushRuntime

/// The tracking-ingestion service. Turns the SDK's tracking URL hits into events.
///
/// This executable already runs the shared plumbing (configuration, logging, metrics,
/// `/health/live`, `/health/ready`, `/metrics` on port 9105, graceful shutdown); its own
/// work arrives with its issue.
@main
enum TrackingIngestionMain {
    static func main() async {
        await ServiceRuntime.main(service: "tracking-ingestion", defaultOpsPort: 9105)
    }
}
