import PushCredentials
import PushPlanning
import PushRegistration
import PushSending
import PushStore
import PushTracking

/// Every migration of schema `push`, oldest first: the owners' lists (docs/architecture.md,
/// "Tables and their owners") made one by `Migrations.assembled(from:)`. The order of the owners
/// is the order of a shared version's parts: the shared store first (the log partitions'
/// function), then the catalog, the credentials, the planner, the tracking service (its
/// counters join the planner's) and the senders. What `pushctl migrate` applies.
package enum SchemaMigrations {
    package static let all: [Migration] = {
        do {
            return try Migrations.assembled(from: owners)
        } catch {
            fatalError("schema push: \(error)")
        }
    }()

    /// The owners' lists, in the order a shared version's parts are applied.
    package static let owners: [[Migration]] = [
        StoreSchema.migrations, RegistrationSchema.migrations, CredentialsSchema.migrations, PlanningSchema.migrations,
        TrackingSchema.migrations, SendingSchema.migrations,
    ]
}
