// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "usher",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "usherd", targets: ["usherd"]),
        .executable(name: "usher", targets: ["usher"]),
        .library(name: "UsherClient", targets: ["UsherClient"]),
        .library(name: "UsherProtocol", targets: ["UsherProtocol"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/LebJe/TOMLKit.git", from: "0.6.0"),
    ],
    targets: [
        .target(name: "UsherProtocol"),
        .target(
            name: "UsherFraming",
            dependencies: [.product(name: "NIOCore", package: "swift-nio")]
        ),
        .target(
            name: "UsherCore",
            dependencies: [
                "UsherProtocol",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "UsherStore",
            dependencies: [
                "UsherCore",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .target(
            name: "UsherProviders",
            dependencies: [
                "UsherCore",
                "UsherStore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "UsherServer",
            dependencies: [
                "UsherProtocol",
                "UsherFraming",
                "UsherCore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "UsherDaemon",
            dependencies: [
                "UsherProtocol",
                "UsherCore",
                "UsherStore",
                "UsherProviders",
                "UsherServer",
                .product(name: "TOMLKit", package: "TOMLKit"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(name: "usherd", dependencies: ["UsherDaemon"]),
        .target(
            name: "UsherClient",
            dependencies: [
                "UsherProtocol",
                "UsherFraming",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "usher",
            dependencies: [
                "UsherClient",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .target(
            name: "UsherTestSupport",
            dependencies: ["UsherProtocol", "UsherClient"],
            path: "Tests/UsherTestSupport"
        ),
        .testTarget(name: "UsherProtocolTests", dependencies: ["UsherProtocol", "UsherFraming"]),
        .testTarget(
            name: "UsherCoreTests",
            dependencies: ["UsherCore", "UsherStore", "UsherProviders", "UsherTestSupport"]
        ),
        .testTarget(
            name: "UsherProvidersTests",
            dependencies: [
                "UsherProviders",
                "UsherStore",
                "UsherCore",
                "UsherTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "UsherIntegrationTests",
            dependencies: [
                "UsherClient",
                "UsherProtocol",
                "UsherTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
    ]
)
