import PushRuntime

/// The delivery-planning service. Turns delivery requests into one message per device.
///
/// This executable already runs the shared plumbing (configuration, logging, metrics,
/// `/health/live`, `/health/ready`, `/metrics` on port 9102, graceful shutdown); its own
/// work arrives with its issue.
@main
enum DeliveryPlanningMain {
    static func main() async {
        await ServiceRuntime.main(service: "delivery-planning", defaultOpsPort: 9102)
    }
}
