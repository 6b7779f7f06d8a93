import NIOCore
import Synchronization

/// What the idle timeout looks at: when a connection last made progress, whether a request is being answered, and
/// whether it is subscribed.
///
/// Only complete requests count as progress: a peer that trickles one byte a second without ever finishing a line
/// is idle. Updated by the connection's `RequestHandler` (and a subscription's forwarding task), and read by its
/// `IdleConnectionCloser`, hence atomics.
final class ConnectionActivity: Sendable {
    private let lastProgress = Atomic<UInt64>(NIODeadline.now().uptimeNanoseconds)
    private let requestsInProgress = Atomic<Int>(0)
    private let subscribedFlag = Atomic<Bool>(false)

    /// A request (a complete, non-blank line) is being answered: the connection is busy until it is. (No clock read
    /// here: a busy connection is never idle, and `requestFinished` starts the idle clock again.)
    func requestStarted() {
        self.requestsInProgress.add(1, ordering: .relaxed)
    }

    /// The request has been answered (its answer handed to the writer); the idle clock starts again from now.
    func requestFinished() {
        self.touch()
        self.requestsInProgress.subtract(1, ordering: .relaxed)
    }

    /// Subscribed connections are exempt from the idle timeout.
    var subscribed: Bool {
        get { self.subscribedFlag.load(ordering: .relaxed) }
        set { self.subscribedFlag.store(newValue, ordering: .relaxed) }
    }

    var isBusy: Bool { self.requestsInProgress.load(ordering: .relaxed) > 0 || self.subscribed }

    var lastProgressAt: NIODeadline { .uptimeNanoseconds(self.lastProgress.load(ordering: .relaxed)) }

    private func touch() {
        self.lastProgress.store(NIODeadline.now().uptimeNanoseconds, ordering: .relaxed)
    }
}

/// Closes a connection that has made no progress (see `ConnectionActivity`) for `limits.idle_timeout`.
///
/// Driven by the connection's `RequestHandler` (started when it joins the pipeline, stopped when it leaves or the
/// channel goes inactive), not a pipeline stage of its own: a stage would cost every request a hop. A request counts
/// as progress as soon as its line is complete, even before it is answered. One timer per connection on its event
/// loop, re-armed for the moment the connection would become idle; it costs nothing between firings.
final class IdleConnectionCloser {
    private let activity: ConnectionActivity
    private let timeout: TimeAmount
    /// Whether the connection holds a lease: a lease lives as long as its connection, so a connection that holds one
    /// is never idle (`usher inhibit` holds its lease for as long as its command runs). Asked only when the timer
    /// fires, never per request.
    private let holdsLease: () -> Bool
    private var timer: Scheduled<Void>?

    init(activity: ConnectionActivity, timeout: TimeAmount, holdsLease: @escaping () -> Bool = { false }) {
        self.activity = activity
        self.timeout = timeout
        self.holdsLease = holdsLease
    }

    /// On the connection's event loop.
    func start(context: ChannelHandlerContext) {
        self.arm(context: context, at: .now() + self.timeout)
    }

    /// On the connection's event loop. Also breaks the cycle between this closer and its timer.
    func stop() {
        self.timer?.cancel()
        self.timer = nil
    }

    private func arm(context: ChannelHandlerContext, at deadline: NIODeadline) {
        self.timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) {
            self.check(context: context)
        }
    }

    private func check(context: ChannelHandlerContext) {
        guard context.channel.isActive else { return }
        if self.activity.isBusy || self.holdsLease() {
            self.arm(context: context, at: .now() + self.timeout)
            return
        }
        let idleAt = self.activity.lastProgressAt + self.timeout
        if idleAt <= .now() {
            context.close(promise: nil)
        } else {
            self.arm(context: context, at: idleAt)
        }
    }
}
