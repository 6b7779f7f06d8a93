// swift-tools-version:6.2
import PackageDescription

/// Our own code builds with every warning as an error; dependencies are left alone.
let strict: [SwiftSetting] = [.treatAllWarnings(as: .error)]

let package = Package(
    name: "usher",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "usherd", targets: ["usherd"]),
        .executable(name: "usher", targets: ["usher"]),
        .executable(name: "usher-load", targets: ["UsherLoad"]),
        .library(name: "UsherClient", targets: ["UsherClient"]),
        .library(name: "UsherProtocol", targets: ["UsherProtocol"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.8.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/LebJe/TOMLKit.git", from: "0.6.0"),
        .package(url: "https://github.com/swiftlang/swift-subprocess.git", from: "1.0.2"),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.5.0"),
    ],
    targets: [
        .target(name: "UsherProtocol", swiftSettings: strict, plugins: ["UsherInterfacePlugin"]),
        /// Generates the protocol's methods, requests, results, types and error codes from
        /// varlink/io.usher.Session.varlink (docs/architecture.md, "Adding a method").
        .plugin(name: "UsherInterfacePlugin", capability: .buildTool(), dependencies: ["UsherInterfaceGenerator"]),
        .executableTarget(name: "UsherInterfaceGenerator", swiftSettings: strict),
        /// Generates `usherVersion` from the VERSION file for the two binaries (see the plugin's doc comment).
        .plugin(name: "VersionPlugin", capability: .buildTool()),
        .target(
            name: "UsherFraming",
            dependencies: [.product(name: "NIOCore", package: "swift-nio")],
            swiftSettings: strict
        ),
        /// The browser login's loopback redirect: the socket both ends set up.
        .target(
            name: "UsherLoopback",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        /// The CLI's one-shot HTTP server for the redirect. A target of its own so that usherd, which only needs the
        /// socket, does not link NIOHTTP1 (with NIO's embedded channels and llhttp, 0.7 MB).
        .target(
            name: "UsherLoopbackServer",
            dependencies: [
                "UsherLoopback",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "UsherCore",
            dependencies: [
                "UsherProtocol",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "OrderedCollections", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
                // DPoP proofs are signed with jwt-kit, as every token is (`DPoPKey`). usherd links it already through
                // UsherProviders; the CLI does not link UsherCore.
                .product(name: "JWTKit", package: "jwt-kit"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "UsherStore",
            dependencies: [
                "UsherCore",
                "UsherProtocol",
                "CSQLite",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "UsherProviders",
            dependencies: [
                "UsherCore",
                "UsherProtocol",
                "UsherStore",
                "UsherLoopback",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                "UsherHTTP",
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
                "CUsherLinux",
            ],
            swiftSettings: strict
        ),
        .target(
            name: "UsherServer",
            dependencies: [
                "UsherProtocol",
                "UsherFraming",
                "UsherCore",
                "CSystemd",
                "CUsherLinux",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict,
            plugins: ["UsherInterfacePlugin"]
        ),
        /// SQLite's C API, from the system's libsqlite3, opened with dlopen when the store first opens a database (its
        /// header says why): the store's typed layer over it is Sources/UsherStore/SQLite.
        .target(name: "CSQLite", dependencies: ["CUsherLoader"]),
        /// libcurl, the system's (Debian's libcurl4), opened with dlopen on the first request to an identity provider:
        /// typed wrappers for its variadic calls, and the loader (Sources/CCurl/include/usher_curl.h says why).
        .target(name: "CCurl", dependencies: ["CUsherLoader"]),
        /// dlopen and dlsym of a library's functions, for CCurl, CSystemd and CSQLite.
        .target(name: "CUsherLoader"),
        /// Requests to identity providers: one thread and one libcurl multi handle for all of them.
        .target(name: "UsherHTTP", dependencies: ["CCurl"], swiftSettings: strict),
        /// Linux calls Swift's Glibc module leaves out (prctl, fgetxattr); header-only.
        .systemLibrary(name: "CUsherLinux"),
        /// libsystemd, opened with dlopen on first use (its header says why); Debian's libsystemd-dev to build.
        .target(name: "CSystemd", dependencies: ["CUsherLoader"]),
        .target(
            name: "UsherDaemon",
            dependencies: [
                "CSystemd",
                "CUsherLinux",
                "UsherHTTP",
                "UsherCore",
                "UsherProtocol",
                "UsherStore",
                "UsherProviders",
                "UsherServer",
                .product(name: "TOMLKit", package: "TOMLKit"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict,
            plugins: ["VersionPlugin"]
        ),
        // One program for the device (usherd and usher are one file in the package, see Sources/usherd): the daemon
        // under the name usherd, the CLI under any other.
        .executableTarget(name: "usherd", dependencies: ["UsherDaemon", "UsherCLI"], swiftSettings: strict),
        .target(
            name: "UsherClient",
            dependencies: [
                "UsherProtocol",
                "UsherFraming",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "UsherCLI",
            dependencies: [
                "UsherClient",
                "UsherLoopbackServer",
                "CUsherLinux",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                // Programs the CLI starts and waits for (`Spawn`): FoundationEssentials only on Linux, which the CLI
                // links already (tools/check-no-foundation.sh).
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: strict,
            plugins: ["VersionPlugin"]
        ),
        // The CLI alone, for development (`swift run usher`); the package ships usherd under this name too.
        .executableTarget(name: "usher", dependencies: ["UsherCLI"], swiftSettings: strict),
        .executableTarget(
            name: "UsherLoad",
            dependencies: [
                "UsherClient",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "UsherTestSupport",
            dependencies: [
                "UsherProtocol",
                // For `FailingStore`, the one store double the core's and the providers' tests share.
                "UsherCore",
                "UsherStore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            path: "Tests/UsherTestSupport",
            swiftSettings: strict
        ),
        .testTarget(
            name: "UsherProtocolTests",
            dependencies: [
                "UsherProtocol",
                "UsherFraming",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "UsherLoopbackTests",
            dependencies: ["UsherLoopback", "UsherLoopbackServer"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "UsherCoreTests",
            dependencies: [
                "UsherCore",
                "UsherProtocol",
                "UsherStore",
                "UsherProviders",
                "UsherTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "UsherStoreTests",
            dependencies: [
                "UsherStore",
                "UsherCore",
                "UsherProtocol",
                "UsherTestSupport",
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "UsherProvidersTests",
            dependencies: [
                "UsherProviders",
                "UsherProtocol",
                "UsherStore",
                "UsherCore",
                "UsherTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                "UsherHTTP",
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "UsherServerTests",
            dependencies: [
                "UsherServer",
                "UsherTestSupport",
                "UsherCore",
                "UsherStore",
                "UsherProviders",
                "UsherProtocol",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "UsherDaemonTests",
            dependencies: [
                "UsherDaemon",
                "UsherServer",
                "UsherCore",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "UsherIntegrationTests",
            dependencies: [
                "UsherClient",
                "UsherCore",
                "UsherProtocol",
                "UsherTestSupport",
                "UsherStore",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
    ]
)
