import ArgumentParser
import Foundation
import Kafka
import Logging
import PostgresNIO
import PushCredentials
import PushEvents
import PushRegistration
import PushRuntime
import PushStore
import Synchronization

extension Topics {
    /// `pushctl topics upgrade-history`: copies a source-of-truth topic into a new topic with
    /// every version-1 record that names a person in clear rewritten as its current version
    /// (docs/operations.md, "Upgrading the version-1 history"; docs/architecture.md, "Erasure").
    struct UpgradeHistory: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "upgrade-history",
            abstract:
                "Copy push.subscriptions, push.delivery-events or push.message-results into a new topic with their version-1 records rewritten so that none names a person in clear.",
            discussion: """
                Registrations (SubscriptionRegistered v1) are sealed under their subject's data key (created if missing); quarantine, \
                lift and purge events v1 name the device by its token's digest; exclusions v1 likewise; DeliveryAccepted v1 counts its \
                recipients; results v1 name the device by digest. Registrations of erased devices (push.erased_devices) and of apps \
                that no longer exist are left out. Every other record is copied as it is. Records go to the partition of their \
                (new) key, merged in the order of their events' times, each source partition's order kept, so every event of a \
                device ends in one partition in order; headers and envelopes (id, time, correlation) are kept. Stop the writers \
                of the topic first; then point every service at the new topic (PUSH_TOPIC_<ID>), rebuild its projections, and \
                delete the old topic.
                """
        )

        @Option(help: "The topic to read: the catalog's subscriptions, delivery-events or message-results topic.")
        var from: String

        @Option(help: "The new topic, created with the source's partitions and the catalog's retention; it must not hold records.")
        var to: String

        @Option(help: "Replication factor of the new topic; -1 takes the broker's default.")
        var replicationFactor: Int = Int(ProcessInfo.processInfo.environment["PUSH_TOPIC_REPLICATION_FACTOR"] ?? "") ?? -1

        func run() async throws {
            let context = try ToolContext()
            let catalog = context.configuration.topics
            guard let source = [catalog.subscriptions, catalog.deliveryEvents, catalog.messageResults].first(where: { $0.name == from }) else {
                throw ValidationError(
                    "--from must be \(catalog.subscriptions.name), \(catalog.deliveryEvents.name) or \(catalog.messageResults.name) "
                        + "(the message and retry topics are bounded to 35 days: their version-1 records expire)")
            }
            guard to != from else { throw ValidationError("--to must name a new topic") }
            let reader = KafkaLogReader(configuration: context.configuration.kafka, logger: context.logger)
            let marks = try await reader.watermarks(topic: source.name)
            let admin = try KafkaAdmin(configuration: context.configuration.kafka, logger: context.logger)
            _ = try await admin.createTopics([
                KafkaTopicSpecification(name: to, partitions: marks.count, replicationFactor: replicationFactor, config: source.config)
            ])
            await admin.close()
            let existing = try await reader.watermarks(topic: to)
            guard existing.count == marks.count else {
                throw ValidationError("\(to) has \(existing.count) partitions, \(source.name) \(marks.count): choose a new topic name")
            }
            let held = existing.values.reduce(0) { $0 + $1.high - $1.low }
            guard held == 0 else { throw ValidationError("\(to) is not empty: choose a new topic name") }

            let logger = context.logger
            let outcome = try await context.withPostgres { postgres in
                let upgrade = try await HistoryUpgrade(postgres: postgres, logger: logger, partitions: marks.keys)
                let producer = try KafkaProducer(configuration: context.configuration.producer, logger: logger)
                do {
                    try await upgrade.copy(topic: source.name, into: to, reader: reader, producer: producer)
                } catch {
                    await producer.close()
                    throw error
                }
                await producer.close()
                return upgrade.counts.withLock { $0 }
            }
            print("read \(outcome.read) records of \(source.name) (\(marks.count) partitions)")
            for (what, count) in outcome.rewritten.sorted(by: { $0.key < $1.key }) { print("  rewritten  \(count)  \(what)") }
            for (what, count) in outcome.dropped.sorted(by: { $0.key < $1.key }) { print("  left out   \(count)  \(what)") }
            print("  copied     \(outcome.copied)  as they were")
            print("wrote \(outcome.written) records to \(to)")
            print(
                "next: point every service and pushctl at \(to) (PUSH_TOPIC_\(source.id)=\(to)), rebuild its projections "
                    + "(pushctl projections replay), check, then delete \(source.name) (docs/operations.md)")
        }
    }
}

/// The copy itself. Batches of the source arrive as the log reader fetches them; each record is
/// rewritten on arrival and queued per source partition; records leave the queues in the order of
/// their events' times (a k-way merge that only ever takes a queue's head, so each source
/// partition's order is kept), as soon as every partition not read to its end has a record
/// queued, and go to the partition of their key. A record whose key changed (a version-1 device
/// event: token to digest) so joins its device's later events in one partition, in time order.
/// Each batch is stored before the reader's callback returns.
final class HistoryUpgrade: Sendable {
    struct Counts: Sendable {
        var read = 0
        var written = 0
        var copied = 0
        var rewritten: [String: Int] = [:]
        var dropped: [String: Int] = [:]
    }

    /// What a record becomes.
    enum Upgrade: Sendable {
        /// A version-1 registration: sealed once its subject's key is known.
        case registration(SubscriptionRegistered)
        /// Rewritten as `payload` (its current version), with `key` as the record and envelope key.
        case rewritten(payload: any PushEvent, key: String?)
    }

    /// A rewritten record waiting in its source partition's queue (`record` nil: left out).
    struct Queued: Sendable {
        var offset: Int64
        var time: Date
        /// Among records of one millisecond (the events' times are written to the millisecond),
        /// a registration leaves first: a device's other events presuppose it, and a version-1
        /// registration (keyed by token) and its device's version-2 events (keyed by digest) sit
        /// in different source partitions, with no order between them but their times.
        var rank: Int
        var record: KafkaProducerRecord?
    }

    struct Merge: Sendable {
        var queues: [Int32: [Queued]] = [:]
        /// The partitions not yet read to their end, as the log reader says (not the
        /// ListOffsets watermarks: Tansu answers those with its last batch's base offset + 1,
        /// and a partition taken as finished too early would let its neighbours' later records
        /// leave before its own).
        var open: Set<Int32>
        /// The last time seen per partition: the time of a record that is not an envelope.
        var lastTime: [Int32: Date] = [:]

        /// Queues a batch's records, in their partitions' order.
        mutating func add(_ batch: [(Int32, Queued)]) {
            for (partition, item) in batch { queues[partition, default: []].append(item) }
        }

        /// Takes the records that can leave: while every open partition has one queued (or at
        /// the end, `all`), the head with the earliest time (then registrations first, then
        /// partition, then offset).
        mutating func ready(all: Bool) -> [KafkaProducerRecord?] {
            var out: [KafkaProducerRecord?] = []
            while true {
                if !all, open.contains(where: { queues[$0]?.isEmpty ?? true }) { break }
                guard
                    let next = queues.filter({ !$0.value.isEmpty }).min(by: { a, b in
                        let (x, y) = (a.value[0], b.value[0])
                        return (x.time, x.rank, a.key, x.offset) < (y.time, y.rank, b.key, y.offset)
                    })?.key
                else { break }
                out.append(queues[next]!.removeFirst().record)
            }
            return out
        }
    }

    let postgres: PostgresClient
    let logger: Logger
    let keys: PersonalDataKeys
    /// Each app's service, read once (an app deleted since has no service: its registrations go).
    let services: [UUID: UUID]
    let decoder: EventDecoder<Upgrade>
    let counts = Mutex(Counts())
    let merge: Mutex<Merge>

    init(postgres: PostgresClient, logger: Logger, partitions: some Sequence<Int32>) async throws {
        self.postgres = postgres
        self.logger = logger
        self.keys = PersonalDataKeys(
            postgres: postgres, wrapping: try CredentialCipher.dataKeys(fromEnvironment: ProcessInfo.processInfo.environment), logger: logger)
        self.merge = Mutex(Merge(open: Set(partitions)))
        var services: [UUID: UUID] = [:]
        for try await (app, service) in try await postgres.query("SELECT app_id, service_id FROM push.apps", logger: logger).decode((UUID, UUID).self) {
            services[app] = service
        }
        self.services = services
        var decoder = EventDecoder<Upgrade>()
        @Sendable func device(_ appId: UUID, _ digest: String) -> String { SealedSubscriptionRegistered.key(appId: appId, tokenDigest: digest) }
        decoder.register(SubscriptionRegistered.self) { event, _ in .registration(event) }
        decoder.register(SubscriptionDisabledV1.self) { event, _ in .rewritten(payload: event.upcast, key: device(event.appId, event.upcast.tokenDigest)) }
        decoder.register(SubscriptionReenabledV1.self) { event, _ in .rewritten(payload: event.upcast, key: device(event.appId, event.upcast.tokenDigest)) }
        decoder.register(SubscriptionPurgedV1.self) { event, _ in .rewritten(payload: event.upcast, key: device(event.appId, event.upcast.tokenDigest)) }
        decoder.register(DeliveryExclusionsRecordedV1.self) { event, _ in .rewritten(payload: event.upcast, key: nil) }
        decoder.register(DeliveryAccepted.self, version: 1) { event, _ in .rewritten(payload: event.recipientsCounted, key: nil) }
        // Results version 1 are read as their digest (the readers' upcast); written as version 2.
        decoder.register(MessageSent.self, version: 1) { event, _ in .rewritten(payload: event, key: nil) }
        decoder.register(MessageFailed.self, version: 1) { event, _ in .rewritten(payload: event, key: nil) }
        decoder.register(MessageExpired.self, version: 1) { event, _ in .rewritten(payload: event, key: nil) }
        decoder.register(MessageCancelled.self, version: 1) { event, _ in .rewritten(payload: event, key: nil) }
        self.decoder = decoder
    }

    func copy(topic: String, into target: String, reader: KafkaLogReader, producer: KafkaProducer) async throws {
        // Each batch is rewritten and what can leave the merge is stored before the reader
        // polls the next one.
        let ended: @Sendable (Int32) -> Void = { [self] partition in _ = merge.withLock { $0.open.remove(partition) } }
        try await reader.read(topic: topic, timeout: .seconds(7 * 24 * 3600), atEnd: ended) { [self] batch in
            try await self.store(batch, into: target, producer: producer)
        }
        try await send(merge.withLock { $0.ready(all: true) }, producer: producer)
    }

    private func store(_ batch: [KafkaConsumerRecord], into target: String, producer: KafkaProducer) async throws {
        let queued = try await rewrite(batch, into: target)
        let ready = merge.withLock { merge in
            merge.add(queued)
            return merge.ready(all: false)
        }
        try await send(ready, producer: producer)
    }

    private func send(_ ready: [KafkaProducerRecord?], producer: KafkaProducer) async throws {
        let records = ready.compactMap { $0 }
        for result in await producer.send(records) { _ = try result.get() }
        counts.withLock { $0.written += records.count }
    }

    /// The batch's records as they will be written (nil: left out), each with its source
    /// partition, offset and event time.
    private func rewrite(_ batch: [KafkaConsumerRecord], into target: String) async throws -> [(Int32, Queued)] {
        var decoded: [(KafkaConsumerRecord, EventMetadata?, Upgrade?)] = []
        decoded.reserveCapacity(batch.count)
        for record in batch {
            switch try? decoder.decode(record.value) {
            case .known(let upgrade, let metadata): decoded.append((record, metadata, upgrade))
            case .unknown(let metadata): decoded.append((record, metadata, nil))
            case nil: decoded.append((record, nil, nil))
            }
        }
        let registrations = decoded.compactMap { if case .registration(let r)? = $0.2 { r } else { nil } }
        let erased = try await erasedDevices(registrations)
        let sealed = try await seal(registrations.filter { !erased.contains(Device($0.appId, TokenDigest.of($0.registrationToken))) })

        var queued: [(Int32, Queued)] = []
        var counts = Counts()
        var lastTime = merge.withLock { $0.lastTime }
        for (record, metadata, upgrade) in decoded {
            counts.read += 1
            let time = metadata?.occurredAt ?? lastTime[record.partition] ?? .distantPast
            lastTime[record.partition] = time
            let rank = metadata?.type == SubscriptionRegistered.eventType ? 0 : 1
            func out(_ key: [UInt8]?, _ value: [UInt8]?) {
                let written = value.map { KafkaProducerRecord(topic: target, key: key, value: $0, headers: record.headers) }
                queued.append((record.partition, Queued(offset: record.offset, time: time, rank: rank, record: written)))
            }
            switch upgrade {
            case nil:
                counts.copied += 1
                out(record.key, record.value)
            case .rewritten(let payload, let key)?:
                var metadata = metadata!
                if let key { metadata.key = key }
                counts.rewritten["\(metadata.type) v\(metadata.version)", default: 0] += 1
                out(key.map { Array($0.utf8) } ?? record.key, try Self.envelope(payload, metadata: metadata))
            case .registration(let registration)?:
                let digest = TokenDigest.of(registration.registrationToken)
                if erased.contains(Device(registration.appId, digest)) {
                    counts.dropped["SubscriptionRegistered v1 of an erased device", default: 0] += 1
                    out(nil, nil)
                } else if let payload = sealed[Device(registration.appId, digest)] {
                    var metadata = metadata!
                    metadata.key = SealedSubscriptionRegistered.key(appId: registration.appId, tokenDigest: digest)
                    counts.rewritten["SubscriptionRegistered v1 (sealed)", default: 0] += 1
                    out(Array(metadata.key.utf8), try Self.envelope(payload, metadata: metadata))
                } else {
                    counts.dropped["SubscriptionRegistered v1 of an app that no longer exists", default: 0] += 1
                    out(nil, nil)
                }
            }
        }
        merge.withLock { $0.lastTime = lastTime }
        let batchCounts = counts
        self.counts.withLock { total in
            total.read += batchCounts.read
            total.copied += batchCounts.copied
            total.rewritten.merge(batchCounts.rewritten, uniquingKeysWith: +)
            total.dropped.merge(batchCounts.dropped, uniquingKeysWith: +)
        }
        return queued
    }

    struct Device: Hashable {
        var appId: UUID
        var digest: String
        init(_ appId: UUID, _ digest: String) {
            self.appId = appId
            self.digest = digest
        }
    }

    /// The devices of `registrations` erased after they registered: what a replay skips, left out.
    private func erasedDevices(_ registrations: [SubscriptionRegistered]) async throws -> Set<Device> {
        guard !registrations.isEmpty else { return [] }
        let rows = try await postgres.query(
            """
            SELECT r.app_id, r.digest FROM unnest(\(registrations.map(\.appId))::uuid[], \(registrations.map { TokenDigest.of($0.registrationToken) })::text[],
                                                  \(registrations.map(\.registeredAt))::timestamptz[]) AS r(app_id, digest, registered_at)
            JOIN push.erased_devices e ON e.app_id = r.app_id AND e.token_digest = r.digest AND r.registered_at <= e.erased_at
            """,
            logger: logger)
        var erased: Set<Device> = []
        for try await (app, digest) in rows.decode((UUID, String).self) { erased.insert(Device(app, digest)) }
        return erased
    }

    /// Each registration sealed under its subject's key (created when missing; concurrent
    /// requests share statements), by device; none for a device whose app no longer exists.
    private func seal(_ registrations: [SubscriptionRegistered]) async throws -> [Device: SealedSubscriptionRegistered] {
        try await withThrowingTaskGroup(of: (Device, SealedSubscriptionRegistered)?.self) { group in
            for registration in registrations {
                guard let service = services[registration.appId] else { continue }
                group.addTask {
                    (Device(registration.appId, TokenDigest.of(registration.registrationToken)), try await self.keys.sealed(registration, serviceId: service))
                }
            }
            var sealed: [Device: SealedSubscriptionRegistered] = [:]
            for try await found in group { if let (device, registration) = found { sealed[device] = registration } }
            return sealed
        }
    }

    /// The envelope `metadata` with `payload` in its current version.
    static func envelope<Payload: PushEvent>(_ payload: Payload, metadata: EventMetadata) throws -> [UInt8] {
        var metadata = metadata
        metadata.type = Payload.eventType
        metadata.version = Payload.eventVersion
        return try EventEnvelope(metadata: metadata, payload: payload).encoded()
    }
}
