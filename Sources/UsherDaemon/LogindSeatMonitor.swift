import CSystemd
import Glibc
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import UsherCore

/// Follows the seats systemd-logind adds and removes while usherd runs (`[seats] source = "logind"`).
///
/// sd-login's monitor is an inotify descriptor on logind's state directory; it is watched on a NIO event loop like any
/// socket (no thread polls it), and each time it becomes readable the seats are listed again and compared with the
/// ones known. Reading the descriptor's bytes is what `sd_login_monitor_flush` does.
struct LogindSeatMonitor: Service {
    let registry: SessionRegistry
    let logger: Logger

    func run() async throws {
        var monitor: OpaquePointer?
        let created = usher_sd_login_monitor_new("seat", &monitor)
        guard created >= 0, let monitor else {
            self.logger.warning(
                "cannot follow logind's seats; the seats known at start stay as they are",
                metadata: ["error": "\(String(cString: strerror(-created)))"]
            )
            return
        }
        defer { usher_sd_login_monitor_unref(monitor) }
        // NIO closes the descriptor it is given; the monitor closes its own.
        let descriptor = dup(usher_sd_login_monitor_get_fd(monitor))
        guard descriptor >= 0 else { return }
        let (changes, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let channel: any Channel
        do {
            channel = try await NIOPipeBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                // inotify refuses reads into a buffer smaller than an event: never let the allocator shrink below one.
                .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 4096))
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(Wakeup(continuation: continuation))
                    }
                }
                .takingOwnershipOfDescriptor(input: descriptor)
                .get()
        } catch {
            close(descriptor)
            self.logger.warning("cannot watch logind's seats", metadata: ["error": "\(error)"])
            return
        }
        self.logger.debug("following logind's seats")
        await self.synchronise()
        await withGracefulShutdownHandler {
            for await _ in changes { await self.synchronise() }
        } onGracefulShutdown: {
            continuation.finish()
        }
        try? await channel.close()
    }

    /// Lists logind's seats and tells the registry which appeared and which went away.
    private func synchronise() async {
        let present = Set(Logind.seats())
        let known = await self.registry.listSeats().seats.filter { $0.source == .logind && $0.present }
        for seat in known where !present.contains(seat.name) { await self.registry.seatDisappeared(seat.name) }
        for seat in present.sorted() { await self.registry.seatAppeared(seat) }
    }

    /// Wakes the monitor's loop when the descriptor had something to read.
    private final class Wakeup: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let continuation: AsyncStream<Void>.Continuation

        init(continuation: AsyncStream<Void>.Continuation) {
            self.continuation = continuation
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            self.continuation.yield()
        }
    }
}
