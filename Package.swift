// swift-tools-version:6.1
import PackageDescription

/// Swift 6 language mode everywhere (complete concurrency checking is its default).
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

/// The long-running servers (the five services and the two simulators) allocate per record and
/// per request; glibc's allocator cost the APNs sender a sixth of its CPU (docs/benchmarks.md),
/// jemalloc a fraction of it. Linked on Linux from Debian's / Ubuntu's libjemalloc-dev.
let jemalloc: [LinkerSetting] = [.linkedLibrary("jemalloc", .when(platforms: [.linux]))]

let package = Package(
    name: "push-channel",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "registration", targets: ["Registration"]),
        .executable(name: "delivery-planning", targets: ["DeliveryPlanning"]),
        .executable(name: "apns-sender", targets: ["APNSSender"]),
        .executable(name: "fcm-sender", targets: ["FCMSender"]),
        .executable(name: "tracking-ingestion", targets: ["TrackingIngestion"]),
        .executable(name: "pushctl", targets: ["PushCtl"]),
        .executable(name: "kafka-bench", targets: ["KafkaBench"]),
        .executable(name: "minimal-route", targets: ["MinimalRoute"]),
        .executable(name: "sender-bench", targets: ["SenderBench"]),
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
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
    ],
    targets: [
        // MARK: librdkafka
        .systemLibrary(
            name: "CRdKafka",
            path: "Shared/CRdKafka",
            pkgConfig: "rdkafka",
            providers: [.apt(["librdkafka-dev"])]
        ),
        .target(
            name: "Kafka",
            dependencies: [
                "CRdKafka",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Shared/Kafka",
            swiftSettings: swiftSettings
        ),

        // MARK: domain, storage, runtime
        .target(
            name: "PushEvents",
            dependencies: [],
            path: "Shared/PushEvents",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "PushStore",
            dependencies: [
                "Kafka",
                "PushEvents",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Shared/PushStore",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "PushRuntime",
            dependencies: [
                "Kafka",
                "PushEvents",
                "PushStore",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Shared/PushRuntime",
            swiftSettings: swiftSettings
        ),

        .target(
            name: "PushRegistration",
            dependencies: [
                "Kafka",
                "PushEvents",
                "PushStore",
                "PushRuntime",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            path: "Shared/PushRegistration",
            swiftSettings: swiftSettings
        ),

        .target(
            name: "PushPlanning",
            dependencies: [
                "Kafka",
                "PushEvents",
                "PushStore",
                "PushRuntime",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Shared/PushPlanning",
            swiftSettings: swiftSettings
        ),

        .target(
            name: "PushTracking",
            dependencies: [
                "Kafka",
                "PushEvents",
                "PushStore",
                "PushRuntime",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Shared/PushTracking",
            swiftSettings: swiftSettings
        ),

        // MARK: provider clients (no project modules: the senders compose them)
        .target(
            name: "PushHTTP2",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            path: "Shared/PushHTTP2",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "APNSClient",
            dependencies: [
                "PushHTTP2",
                "PushEvents",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            path: "Shared/APNSClient",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "FCMClient",
            dependencies: [
                "PushHTTP2",
                "PushEvents",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            path: "Shared/FCMClient",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "PushSending",
            dependencies: [
                "Kafka",
                "PushEvents",
                "PushStore",
                "PushRuntime",
                "PushRegistration",
                "APNSClient",
                "FCMClient",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Shared/PushSending",
            swiftSettings: swiftSettings
        ),

        // MARK: services (thin executables)
        .executableTarget(name: "Registration", dependencies: ["PushRuntime", "PushRegistration"], path: "Services/Registration", swiftSettings: swiftSettings, linkerSettings: jemalloc),
        .executableTarget(name: "DeliveryPlanning", dependencies: ["PushRuntime", "PushPlanning"], path: "Services/DeliveryPlanning", swiftSettings: swiftSettings, linkerSettings: jemalloc),
        .executableTarget(name: "APNSSender", dependencies: ["PushRuntime", "PushSending"], path: "Services/APNSSender", swiftSettings: swiftSettings, linkerSettings: jemalloc),
        .executableTarget(name: "FCMSender", dependencies: ["PushRuntime", "PushSending"], path: "Services/FCMSender", swiftSettings: swiftSettings, linkerSettings: jemalloc),
        .executableTarget(name: "TrackingIngestion", dependencies: ["PushRuntime", "PushTracking"], path: "Services/TrackingIngestion", swiftSettings: swiftSettings, linkerSettings: jemalloc),

        // MARK: tools
        .executableTarget(
            name: "PushCtl",
            dependencies: [
                "PushRuntime",
                "PushRegistration",
                "PushPlanning",
                "PushTracking",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Tools/PushCtl",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "KafkaBench",
            dependencies: [
                "Kafka",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "bench/KafkaBench",
            swiftSettings: swiftSettings
        ),

        .executableTarget(
            name: "SenderBench",
            dependencies: [
                "Kafka", "PushEvents", "PushRegistration", "PushRuntime", "PushStore", "FCMClient", "PushHTTP2",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            path: "bench/SenderBench",
            swiftSettings: swiftSettings,
            // Its HTTP/2 client run is compared with the senders, which link jemalloc.
            linkerSettings: jemalloc
        ),

        .executableTarget(
            name: "MinimalRoute",
            dependencies: [.product(name: "Hummingbird", package: "hummingbird")],
            path: "bench/MinimalRoute",
            swiftSettings: swiftSettings
        ),

        // MARK: provider simulators (APNs and FCM over HTTP/2 + TLS, for tests, demo and benchmarks)
        .target(
            name: "ProviderSimulatorCore",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Simulators/ProviderSimulatorCore",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "APNsSimulator",
            dependencies: [
                "ProviderSimulatorCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Simulators/APNsSimulator",
            swiftSettings: swiftSettings,
            linkerSettings: jemalloc
        ),
        .executableTarget(
            name: "FCMSimulator",
            dependencies: [
                "ProviderSimulatorCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Simulators/FCMSimulator",
            swiftSettings: swiftSettings,
            linkerSettings: jemalloc
        ),

        // MARK: tests
        .testTarget(name: "PushEventsTests", dependencies: ["PushEvents"], swiftSettings: swiftSettings),
        .testTarget(name: "KafkaTests", dependencies: ["Kafka"], swiftSettings: swiftSettings),
        .testTarget(name: "PushHTTP2Tests", dependencies: ["PushHTTP2"], swiftSettings: swiftSettings),
        .testTarget(
            name: "PushRegistrationTests",
            dependencies: [
                "PushRegistration", "PushRuntime", "PushStore", "PushEvents", "Kafka",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PushPlanningTests",
            dependencies: [
                "PushPlanning", "PushRegistration", "PushTracking", "PushRuntime", "PushStore", "PushEvents", "Kafka",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "SimulatorTests",
            dependencies: [
                "ProviderSimulatorCore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FCMClientTests",
            dependencies: [
                "FCMClient",
                "ProviderSimulatorCore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "APNSClientTests",
            dependencies: [
                "APNSClient",
                "ProviderSimulatorCore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PushTrackingTests",
            dependencies: [
                "PushTracking", "PushRuntime", "PushStore", "PushEvents", "Kafka",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PushSendingTests",
            dependencies: [
                "PushSending", "APNSClient", "ProviderSimulatorCore", "PushRegistration", "PushRuntime", "PushStore", "PushEvents", "Kafka",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PushStoreTests",
            dependencies: ["PushStore", "PushRuntime", "Kafka", "PushEvents"],
            swiftSettings: swiftSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
