import Glibc
import Logging
import NIOPosix
import ServiceLifecycle
import UsherCore

/// `[seats] follow = "logind"`: each seat's active user is whoever logind's active session on it stands for, and the
/// seat is locked while that session is.
///
/// The bus is read on a thread of its own (`LogindBus` blocks), which reduces logind's sessions to each seat's state
/// (`SeatFollow`) and hands the seats whose state changed, in order, to this service's task; the task applies them to
/// the registry one after the other, so a lock that comes after a switch still waiting for delay leases is applied after
/// it. When the bus or logind goes away, the seats stay as they are, and are followed again once logind is back.
struct LogindFollower: Service {
    let registry: SessionRegistry
    let logger: Logger

    /// What logind shows on a seat: its active session (nil: none), that session's Unix user, and whether it is locked.
    struct SeatFollow: Sendable, Hashable {
        var seat: String
        var session: String?
        var unixUser: String?
        var locked: Bool
    }

    func run() async throws {
        var ends: [Int32] = [-1, -1]
        // Programs usherd starts (function providers) must not inherit it.
        guard pipe(&ends) == 0, fcntl(ends[0], F_SETFD, FD_CLOEXEC) == 0, fcntl(ends[1], F_SETFD, FD_CLOEXEC) == 0
        else {
            self.logger.error(
                "cannot follow logind: no pipe",
                metadata: ["error": "\(String(cString: strerror(errno)))"]
            )
            return
        }
        defer {
            close(ends[0])
            close(ends[1])
        }
        let (wake, stop) = (ends[0], ends[1])
        let (changes, continuation) = AsyncStream.makeStream(of: SeatFollow.self)
        let pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
        let logger = self.logger
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                group.addTask {
                    // The bus thread: runs until `stop` is written.
                    _ = try? await pool.runIfActive {
                        var follower = LogindSessions(logger: logger) { continuation.yield($0) }
                        follower.run(wake: wake)
                    }
                    continuation.finish()
                }
                for await change in changes { await self.apply(change) }
            }
        } onGracefulShutdown: {
            var one: UInt8 = 1
            _ = write(stop, &one, 1)
        }
        try? await pool.shutdownGracefully()
    }

    /// Makes the seat show what logind shows.
    private func apply(_ change: SeatFollow) async {
        let userID: String?
        if let session = change.session {
            userID = await self.registry.followedUser(logindSession: session, unixUser: change.unixUser)
        } else {
            userID = nil
        }
        do {
            try await self.registry.follow(activeUser: userID, on: change.seat)
            try await self.registry.follow(locked: change.locked, on: change.seat)
        } catch {
            // The registry refuses only while stopping: nothing to follow then.
            self.logger.warning(
                "could not follow logind's session",
                metadata: ["seat": "\(change.seat)", "error": "\(error)"]
            )
        }
    }
}

/// logind's sessions as the bus thread knows them, reduced to each seat's `SeatFollow`. Used on the bus thread only.
struct LogindSessions {
    let logger: Logger
    let emit: (LogindFollower.SeatFollow) -> Void
    /// The sessions with a seat, by object path, as last read.
    private var sessions: [String: LogindBus.Session] = [:]
    /// Whether each session is locked: its LockedHint when that changes, else the last Lock or Unlock signal.
    private var locked: [String: Bool] = [:]
    /// Each seat's state as last handed on (kept across reconnections: only changes are handed on).
    private var shown: [String: LogindFollower.SeatFollow] = [:]

    init(logger: Logger, emit: @escaping (LogindFollower.SeatFollow) -> Void) {
        self.logger = logger
        self.emit = emit
    }

    /// Connects, follows, and connects again when the bus goes away, until `wake` is readable.
    mutating func run(wake: Int32) {
        var delay: Int32 = 250
        var reportedDown = false
        while !Self.isReadable(wake, milliseconds: 0) {
            let bus: LogindBus
            do {
                bus = try LogindBus()
            } catch {
                if !reportedDown {
                    self.logger.warning(
                        "cannot reach the system bus; seats stay as they are until logind can be followed",
                        metadata: ["error": "\(error)"]
                    )
                    reportedDown = true
                }
                if Self.isReadable(wake, milliseconds: delay) { return }
                delay = min(delay * 2, 5000)
                continue
            }
            delay = 250
            reportedDown = false
            self.logger.info("following logind on the system bus")
            do {
                if try self.follow(bus, wake: wake) { return }
            } catch {
                self.logger.warning(
                    "lost the system bus; seats stay as they are until logind can be followed again",
                    metadata: ["error": "\(error)"]
                )
            }
        }
    }

    /// Follows logind on one connection; answers true when woken to stop, throws when the connection is gone.
    private mutating func follow(_ bus: LogindBus, wake: Int32) throws(LogindBus.Failure) -> Bool {
        self.read(bus)
        while true {
            for signal in try bus.process() {
                switch signal {
                case .changed:
                    self.read(bus)
                case .lock(let path), .unlock(let path):
                    guard let session = self.sessions[path] else { continue }
                    self.locked[path] = signal == .lock(path: path)
                    // A signal, not a state: handed on even when the seat looked locked (or unlocked) already, since
                    // a PIN may have unlocked it since.
                    self.show(again: session.seat)
                case .logindGone:
                    // Said even when a read just failed on the way out ("does not answer"): this is the reason.
                    self.logger.warning("logind left the system bus; seats stay as they are")
                case .logindBack:
                    self.logger.info("logind is back on the system bus")
                    self.read(bus)
                }
            }
            if try bus.wait(wake: wake) { return true }
        }
    }

    /// Reads every session and seat again and hands on the seats that changed; when logind does not answer, says so
    /// and changes nothing.
    private mutating func read(_ bus: LogindBus) {
        let sessions: [LogindBus.Session]
        let seats: [String: String]
        do {
            sessions = try bus.sessions()
            seats = try bus.seats()
        } catch {
            self.logger.warning(
                "logind does not answer; seats stay as they are until it does",
                metadata: ["error": "\(error)"]
            )
            return
        }
        var next: [String: LogindBus.Session] = [:]
        for session in sessions {
            if self.sessions[session.path]?.lockedHint != session.lockedHint || self.locked[session.path] == nil {
                self.locked[session.path] = session.lockedHint
            }
            next[session.path] = session
        }
        self.locked = self.locked.filter { next[$0.key] != nil }
        self.sessions = next
        self.show(activeSessions: seats)
    }

    /// Hands on each seat whose state differs from what was handed on last (and `again`, whatever its state).
    private mutating func show(activeSessions: [String: String]? = nil, again: String? = nil) {
        var seats = Set(self.sessions.values.map(\.seat)).union(self.shown.keys)
        if let activeSessions { seats.formUnion(activeSessions.keys) }
        for seat in seats.sorted() {
            let onSeat = self.sessions.values.filter { $0.seat == seat }.sorted { $0.id < $1.id }
            // The seat's ActiveSession when that session says it is active; else the session that says so (logind does
            // not always signal ActiveSession: systemd#5210).
            let named = activeSessions?[seat] ?? self.shown[seat]?.session
            let active = onSeat.first { $0.id == named && $0.active } ?? onSeat.first { $0.active }
            let state = LogindFollower.SeatFollow(
                seat: seat,
                session: active?.id,
                unixUser: active?.user,
                locked: active.map { self.locked[$0.path] ?? $0.lockedHint } ?? false
            )
            guard self.shown[seat] != state || seat == again else { continue }
            self.shown[seat] = state
            self.logger.debug(
                "logind seat",
                metadata: [
                    "seat": "\(seat)", "session": "\(state.session ?? "none")", "locked": "\(state.locked)",
                ]
            )
            self.emit(state)
        }
    }

    /// Whether the descriptor is readable within `milliseconds`.
    private static func isReadable(_ descriptor: Int32, milliseconds: Int32) -> Bool {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, milliseconds) > 0
    }
}
