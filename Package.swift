// swift-tools-version:6.1
import PackageDescription

// The package reads in the order of the architecture (docs/architecture.md draws the same graph,
// and scripts/check-architecture keeps the two equal):
//
//   Shared/    what two or more services use: events, the Kafka client, the store, the runtime,
//              the HTTP/2 client, the provider clients, credentials
//   Services/  one folder per service: its library and its thin executable (`Main/`)
//   Tools/, bench/, Simulators/, Tests/
//
// Edges run one way: a service's module imports shared modules only, never another service's;
// shared modules never import a service's.

/// Swift 6 language mode everywhere (complete concurrency checking is its default).
///
/// Release builds leave out the run-time exclusivity checks (`swift_beginAccess` on every access
/// to a class's stored property or a global): 4.8 % of the planner's CPU in the end-to-end run's
/// profile (docs/benchmarks.md, "Cost ledger"). Debug builds, which every test runs, keep them,
/// so an overlapping access still fails the suite; the compile-time checks stay everywhere.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release)),
]

/// The long-running servers (the five services and the two simulators) allocate per record and
/// per request; glibc's allocator cost the APNs sender a sixth of its CPU (docs/benchmarks.md),
/// jemalloc a fraction of it. Linked on Linux from Debian's / Ubuntu's libjemalloc-dev.
let jemalloc: [LinkerSetting] = [.linkedLibrary("jemalloc", .when(platforms: [.linux]))]

// The external products, named once.
let argumentParser: Target.Dependency = .product(name: "ArgumentParser", package: "swift-argument-parser")
let asyncHTTPClient: Target.Dependency = .product(name: "AsyncHTTPClient", package: "async-http-client")
let crypto: Target.Dependency = .product(name: "Crypto", package: "swift-crypto")
let cryptoExtras: Target.Dependency = .product(name: "_CryptoExtras", package: "swift-crypto")
let hummingbird: Target.Dependency = .product(name: "Hummingbird", package: "hummingbird")
let bcrypt: Target.Dependency = .product(name: "HummingbirdBcrypt", package: "hummingbird-auth")
let hummingbirdCore: Target.Dependency = .product(name: "HummingbirdCore", package: "hummingbird")
let logging: Target.Dependency = .product(name: "Logging", package: "swift-log")
let metrics: Target.Dependency = .product(name: "Metrics", package: "swift-metrics")
let mustache: Target.Dependency = .product(name: "Mustache", package: "swift-mustache")
let metricsTestKit: Target.Dependency = .product(name: "MetricsTestKit", package: "swift-metrics")
let nioCore: Target.Dependency = .product(name: "NIOCore", package: "swift-nio")
let nioEmbedded: Target.Dependency = .product(name: "NIOEmbedded", package: "swift-nio")
let nioHPACK: Target.Dependency = .product(name: "NIOHPACK", package: "swift-nio-http2")
let nioHTTP1: Target.Dependency = .product(name: "NIOHTTP1", package: "swift-nio")
let nioHTTP2: Target.Dependency = .product(name: "NIOHTTP2", package: "swift-nio-http2")
let nioPosix: Target.Dependency = .product(name: "NIOPosix", package: "swift-nio")
let nioSSL: Target.Dependency = .product(name: "NIOSSL", package: "swift-nio-ssl")
let nioTLS: Target.Dependency = .product(name: "NIOTLS", package: "swift-nio")
let postgresNIO: Target.Dependency = .product(name: "PostgresNIO", package: "postgres-nio")
let prometheus: Target.Dependency = .product(name: "Prometheus", package: "swift-prometheus")
let swiftASN1: Target.Dependency = .product(name: "SwiftASN1", package: "swift-asn1")
let serviceLifecycle: Target.Dependency = .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")
let x509: Target.Dependency = .product(name: "X509", package: "swift-certificates")

let package = Package(
    name: "push-channel",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "registration", targets: ["Registration"]),
        .executable(name: "delivery-planning", targets: ["DeliveryPlanning"]),
        .executable(name: "apns-sender", targets: ["APNSSender"]),
        .executable(name: "fcm-sender", targets: ["FCMSender"]),
        .executable(name: "tracking-ingestion", targets: ["TrackingIngestion"]),
        .executable(name: "console", targets: ["Console"]),
        .executable(name: "pushctl", targets: ["PushCtl"]),
        .executable(name: "kafka-bench", targets: ["KafkaBench"]),
        .executable(name: "minimal-route", targets: ["MinimalRoute"]),
        .executable(name: "sender-bench", targets: ["SenderBench"]),
        .executable(name: "micro-bench", targets: ["MicroBench"]),
        .executable(name: "apns-simulator", targets: ["APNsSimulator"]),
        .executable(name: "fcm-simulator", targets: ["FCMSimulator"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        // Operators' console passwords are bcrypt hashes (docs/admin-api.md, "Console sign-in").
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth.git", from: "2.5.0"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        // The console's pages are Mustache templates (docs/console.md, "Templates").
        .package(url: "https://github.com/hummingbird-project/swift-mustache", from: "2.1.1"),
        // Counts the heap allocations of the micro-benchmarks' hot paths (bench/MicroBench).
        // ordo-one's package-benchmark, which wraps it, needs swift-runtime-interposer on Linux
        // with Swift 6.3, which does not resolve here.
        .package(url: "https://github.com/ordo-one/malloc-interposer.git", from: "1.6.1"),
    ],
    targets: [
        // MARK: Shared: the wire's small pieces, spelled once (base64url, UUID text, Duration in seconds, provider header names; no dependency)
        .target(name: "PushWire", path: "Shared/PushWire", swiftSettings: swiftSettings),

        // MARK: Shared: events and their codecs (only the wire's pieces below them: every service reads them; Crypto for
        // the token digest that names a device in the events, docs/architecture.md "Erasure")
        .target(name: "PushEvents", dependencies: ["PushWire", crypto], path: "Shared/PushEvents", swiftSettings: swiftSettings),

        // MARK: Shared: the Kafka client over librdkafka
        .systemLibrary(
            name: "CRdKafka",
            path: "Shared/CRdKafka",
            pkgConfig: "rdkafka",
            providers: [.apt(["librdkafka-dev"])]
        ),
        .target(
            name: "Kafka",
            dependencies: ["CRdKafka", "PushWire", nioCore, nioPosix, logging, metrics, serviceLifecycle],
            path: "Shared/Kafka",
            swiftSettings: swiftSettings
        ),

        // MARK: Shared: PostgreSQL settings, migrations, the exactly-once projection runner, dead letters
        .target(
            name: "PushStore",
            dependencies: ["Kafka", "PushEvents", "PushWire", nioCore, postgresNIO, nioSSL, logging, metrics, serviceLifecycle],
            path: "Shared/PushStore",
            swiftSettings: swiftSettings
        ),

        // MARK: Shared: the runtime every service runs in (configuration, logs, metrics, health, lifecycle)
        .target(
            name: "PushRuntime",
            dependencies: [
                "Kafka", "PushEvents", "PushStore", crypto, hummingbird, hummingbirdCore, nioCore, postgresNIO, nioSSL, logging, metrics, prometheus,
                serviceLifecycle,
            ],
            path: "Shared/PushRuntime",
            swiftSettings: swiftSettings
        ),

        // MARK: Shared: the HTTP/2 client under both provider clients (only the wire's pieces below it)
        .target(
            name: "PushHTTP2",
            dependencies: ["PushWire", nioCore, nioPosix, nioHTTP2, nioHPACK, nioTLS, nioSSL],
            path: "Shared/PushHTTP2",
            swiftSettings: swiftSettings
        ),

        // MARK: Shared: the provider clients (only the HTTP/2 client and the wire's pieces below them; the senders compose them)
        .target(
            name: "APNS",
            dependencies: ["PushHTTP2", "PushWire", nioCore, nioHPACK, nioSSL, crypto, logging, metrics],
            path: "Shared/APNS",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "FCM",
            dependencies: ["PushHTTP2", "PushWire", asyncHTTPClient, nioCore, nioPosix, nioHTTP2, nioHPACK, nioSSL, cryptoExtras, logging, metrics],
            path: "Shared/FCM",
            swiftSettings: swiftSettings
        ),

        // MARK: Shared: provider credentials (the typed secret, sealing, storage in push.app_credentials)
        .target(
            name: "PushCredentials",
            dependencies: ["PushEvents", "PushRuntime", "PushStore", postgresNIO, crypto, logging],
            path: "Shared/PushCredentials",
            swiftSettings: swiftSettings
        ),

        // MARK: Services: registration (SDK endpoints, admin API, catalog and subscription projections)
        .target(
            name: "PushRegistration",
            dependencies: [
                "Kafka", "PushCredentials", "PushEvents", "PushWire", "PushStore", "PushRuntime", hummingbird, bcrypt, postgresNIO, crypto, cryptoExtras,
                nioCore, nioPosix, nioSSL, logging, metrics, serviceLifecycle,
            ],
            path: "Services/Registration/PushRegistration",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "Registration",
            dependencies: ["PushCredentials", "PushRuntime", "PushRegistration"],
            path: "Services/Registration/Main",
            swiftSettings: swiftSettings,
            linkerSettings: jemalloc
        ),

        // MARK: Services: delivery planning (validation, targeting, personalisation, fan-out, broad log)
        .target(
            name: "PushPlanning",
            dependencies: [
                "Kafka", "PushEvents", "PushStore", "PushRuntime", "PushWire", hummingbird, postgresNIO, crypto, nioCore, logging, metrics, serviceLifecycle,
            ],
            path: "Services/DeliveryPlanning/PushPlanning",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "DeliveryPlanning",
            dependencies: ["PushCredentials", "PushRuntime", "PushPlanning"],
            path: "Services/DeliveryPlanning/Main",
            swiftSettings: swiftSettings,
            linkerSettings: jemalloc
        ),

        // MARK: Services: the two senders. One module (`PushSending`) holds what only they share
        // (`Services/SenderCore`: the consumer loop, retries, quarantine, results) and each
        // sender's transport (`Services/APNSSender/APNSSending`, `Services/FCMSender/FCMSending`):
        // the consumer loop is specialized for both transports, which needs them in its module
        // (docs/benchmarks.md). Each sender's executable is its own `Main/`.
        .target(
            name: "PushSending",
            dependencies: [
                "Kafka", "PushCredentials", "PushEvents", "PushWire", "PushStore", "PushRuntime", "APNS", "FCM", postgresNIO, nioCore, nioPosix, logging,
                metrics, serviceLifecycle,
            ],
            path: "Services",
            exclude: ["Registration", "DeliveryPlanning", "TrackingIngestion", "Console", "APNSSender/Main", "FCMSender/Main"],
            sources: ["SenderCore", "APNSSender/APNSSending", "FCMSender/FCMSending"],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "APNSSender",
            dependencies: ["PushRuntime", "PushSending"],
            path: "Services/APNSSender/Main",
            swiftSettings: swiftSettings,
            linkerSettings: jemalloc
        ),
        .executableTarget(
            name: "FCMSender",
            dependencies: ["PushRuntime", "PushSending"],
            path: "Services/FCMSender/Main",
            swiftSettings: swiftSettings,
            linkerSettings: jemalloc
        ),

        // MARK: Services: tracking ingestion (the SDK's tracking URL and the tracking log)
        .target(
            name: "PushTracking",
            dependencies: [
                "Kafka", "PushEvents", "PushStore", "PushRuntime", "PushWire", hummingbird, postgresNIO, nioCore, logging, metrics, serviceLifecycle,
            ],
            path: "Services/TrackingIngestion/PushTracking",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "TrackingIngestion",
            dependencies: ["PushRuntime", "PushTracking"],
            path: "Services/TrackingIngestion/Main",
            swiftSettings: swiftSettings,
            linkerSettings: jemalloc
        ),

        // MARK: Services: the console (web pages behind the admin token: reports read PostgreSQL, writes go through the admin APIs)
        .target(
            name: "PushConsole",
            dependencies: [
                "PushRuntime", "PushStore", "PushWire", asyncHTTPClient, nioHTTP1, hummingbird, hummingbirdCore, mustache, postgresNIO, crypto, nioCore,
                logging, serviceLifecycle,
            ],
            path: "Services/Console/PushConsole",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "Console",
            dependencies: ["PushRuntime", "PushConsole"],
            path: "Services/Console/Main",
            swiftSettings: swiftSettings,
            linkerSettings: jemalloc
        ),

        // MARK: Tools: pushctl (migrations, topics, catalog, projections, reports)
        .target(
            name: "PushSchema",
            dependencies: ["PushCredentials", "PushPlanning", "PushRegistration", "PushSending", "PushStore", "PushTracking"],
            path: "Tools/PushSchema",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "PushCtl",
            dependencies: [
                "Kafka", "PushCredentials", "PushEvents", "PushWire", "PushStore", "PushRuntime", "PushRegistration", "PushPlanning", "PushTracking",
                "PushSchema", asyncHTTPClient, nioCore, nioSSL, postgresNIO, logging, serviceLifecycle, argumentParser,
            ],
            path: "Tools/PushCtl",
            swiftSettings: swiftSettings
        ),

        // MARK: bench: the benchmarks' own executables
        .executableTarget(
            name: "KafkaBench",
            dependencies: ["Kafka", argumentParser, logging],
            path: "bench/KafkaBench",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "SenderBench",
            dependencies: [
                "Kafka", "PushCredentials", "PushEvents", "PushRuntime", "PushSchema", "PushStore", "FCM", "PushHTTP2", argumentParser, crypto, logging,
                nioCore, nioPosix,
                nioSSL, nioHPACK, postgresNIO,
            ],
            path: "bench/SenderBench",
            swiftSettings: swiftSettings,
            // Its HTTP/2 client run is compared with the senders, which link jemalloc.
            linkerSettings: jemalloc
        ),
        .executableTarget(
            name: "MicroBench",
            dependencies: [
                "Kafka", "PushCredentials", "PushEvents", "PushPlanning", "PushSending", "PushStore", crypto,
                .product(name: "MallocInterposerSwift", package: "malloc-interposer"),
            ],
            path: "bench/MicroBench",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "MinimalRoute",
            dependencies: [hummingbird, logging],
            path: "bench/MinimalRoute",
            swiftSettings: swiftSettings
        ),

        // MARK: Simulators: APNs and FCM over HTTP/2 + TLS, for tests, the demo and benchmarks
        .target(
            name: "ProviderSimulatorCore",
            dependencies: [
                "PushHTTP2", "PushWire", nioCore, nioPosix, nioHTTP1, nioHTTP2, nioHPACK, nioSSL, crypto, cryptoExtras, x509, swiftASN1, logging,
                argumentParser,
            ],
            path: "Simulators/ProviderSimulatorCore",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "APNsSimulator",
            dependencies: ["ProviderSimulatorCore", argumentParser, logging, nioPosix],
            path: "Simulators/APNsSimulator",
            swiftSettings: swiftSettings,
            linkerSettings: jemalloc
        ),
        .executableTarget(
            name: "FCMSimulator",
            dependencies: ["ProviderSimulatorCore", argumentParser, logging, nioPosix],
            path: "Simulators/FCMSimulator",
            swiftSettings: swiftSettings,
            linkerSettings: jemalloc
        ),

        // MARK: Tests
        // Unit tests (`<Module>UnitTests`) need nothing running: `swift test --filter UnitTests`
        // runs them in seconds without the stack. Integration tests (`<Module>IntegrationTests`)
        // talk to the real PostgreSQL, broker, simulators and built executables that
        // `scripts/test` provides (docs/testing.md).

        /// What the harnesses share: ephemeral ports, the stack's settings, starting and stopping
        /// the built executables. Test-only: no product depends on it.
        .target(name: "PushTestSupport", path: "Tests/PushTestSupport", swiftSettings: swiftSettings),
        .testTarget(name: "PushEventsUnitTests", dependencies: ["PushEvents", "PushWire", crypto], swiftSettings: swiftSettings),
        .testTarget(name: "PushRuntimeUnitTests", dependencies: ["PushRuntime", "PushSchema", "PushStore", "Kafka"], swiftSettings: swiftSettings),
        .testTarget(name: "PushHTTP2UnitTests", dependencies: ["PushHTTP2", nioCore, nioEmbedded, nioHTTP2, nioHPACK], swiftSettings: swiftSettings),
        .testTarget(name: "APNSUnitTests", dependencies: ["APNS"], swiftSettings: swiftSettings),
        .testTarget(name: "FCMUnitTests", dependencies: ["FCM", "PushWire", "PushTestSupport"], swiftSettings: swiftSettings),
        .testTarget(
            name: "PushRegistrationUnitTests",
            dependencies: ["PushRegistration", "PushCredentials", "PushRuntime", "PushEvents", "PushStore", "PushTestSupport", "PushWire", crypto],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "PushPlanningUnitTests", dependencies: ["PushPlanning", "PushEvents", "PushRuntime", "Kafka", "PushTestSupport"], swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PushSendingUnitTests",
            dependencies: [
                "PushSending", "PushCredentials", "PushRuntime", "PushEvents", "PushStore", "Kafka", logging, metrics, metricsTestKit, serviceLifecycle,
            ],
            swiftSettings: swiftSettings),
        .testTarget(name: "PushConsoleUnitTests", dependencies: ["PushConsole", "PushRuntime", crypto], swiftSettings: swiftSettings),
        .testTarget(name: "PushTrackingUnitTests", dependencies: ["PushTracking", "PushEvents"], swiftSettings: swiftSettings),
        .testTarget(name: "KafkaIntegrationTests", dependencies: ["Kafka", "PushTestSupport", logging, metricsTestKit], swiftSettings: swiftSettings),
        .testTarget(
            name: "PushStoreIntegrationTests",
            dependencies: [
                "PushStore", "PushSchema", "PushRuntime", "PushCredentials", "Kafka", "PushEvents", "PushTestSupport", logging, postgresNIO, serviceLifecycle,
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "APNSIntegrationTests",
            dependencies: ["APNS", "ProviderSimulatorCore", "PushTestSupport", nioCore, nioPosix, nioSSL, crypto, logging, metrics, metricsTestKit],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FCMIntegrationTests",
            dependencies: ["FCM", "ProviderSimulatorCore", "PushTestSupport", asyncHTTPClient, nioCore, nioPosix, nioHTTP1, nioSSL, cryptoExtras, logging],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PushRegistrationIntegrationTests",
            dependencies: [
                "PushRegistration", "PushCredentials", "PushRuntime", "PushSchema", "PushStore", "PushEvents", "Kafka", "PushTestSupport", serviceLifecycle,
                crypto, cryptoExtras, logging, postgresNIO,
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PushPlanningIntegrationTests",
            dependencies: [
                "PushPlanning", "PushRegistration", "PushTracking", "PushConsole", "PushCredentials", "PushRuntime", "PushSchema", "PushStore", "PushEvents",
                "Kafka", "PushTestSupport",
                serviceLifecycle,
                logging, postgresNIO,
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PushSendingIntegrationTests",
            dependencies: [
                "PushSending", "PushPlanning", "APNS", "ProviderSimulatorCore", "PushCredentials", "PushRuntime", "PushSchema", "PushStore", "PushEvents",
                "Kafka",
                "PushTestSupport",
                serviceLifecycle, crypto, cryptoExtras, nioPosix, postgresNIO, logging,
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PushTrackingIntegrationTests",
            dependencies: [
                "PushTracking", "PushRuntime", "PushSchema", "PushStore", "PushEvents", "Kafka", "PushTestSupport", serviceLifecycle, logging, postgresNIO,
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "SimulatorIntegrationTests",
            dependencies: [
                "ProviderSimulatorCore", "PushWire", asyncHTTPClient, nioCore, nioPosix, nioHTTP1, nioHTTP2, nioHPACK, nioSSL, crypto, cryptoExtras, logging,
                x509,
            ],
            swiftSettings: swiftSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
