import ArgumentParser
import Crypto
import DequeModule
import FoundationEssentials
import JWTKit
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle
import Subprocess
import TOMLKit
import _CryptoExtras

/// Uses each library usherd links once, as usherd does, so that the link keeps of each at least what usherd's keeps.
/// Run with --run, it does it all once and waits for SIGTERM; without, it prints its name.
@main
struct DaemonLibraries: AsyncParsableCommand {
    @Option var socket = "/tmp/size-floor.sock"
    @Flag var run = false

    struct Payload: JWTPayload {
        var sub: SubjectClaim
        func verify(using algorithm: some JWTAlgorithm) throws {}
    }

    struct Idle: Service {
        func run() async throws { try await gracefulShutdown() }
    }

    func run() async throws {
        guard self.run else { return print("size-floor") }
        let logger = Logger(label: "size-floor")
        let table = try TOMLTable(string: "a = 1")
        var queue = Deque<Int>()
        queue.append(table["a"]?.int ?? 0)
        _ = try P256.Signing.PrivateKey().signature(for: Data("x".utf8))
        _ = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: ES256PrivateKey())
        _ = try await keys.verify(try await keys.sign(Payload(sub: "x")), as: Payload.self)
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in channel.pipeline.configureHTTPServerPipeline() }
            .bind(unixDomainSocketPath: self.socket, cleanupExistingSocketFile: true).get()
        let child = try await Subprocess.run(.name("true"), output: .string(limit: 100))
        logger.info("\(child.terminationStatus) \(queue.count)")
        try await ServiceGroup(services: [Idle()], gracefulShutdownSignals: [.sigterm], logger: logger).run()
        try await channel.close()
    }
}
