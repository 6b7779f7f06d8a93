import CSystemd
import Glibc

/// A connection to systemd-logind on the system bus, through libsystemd's sd-bus (`sd_bus_open_system`, which honours
/// `DBUS_SYSTEM_BUS_ADDRESS` as every sd-bus client does). It answers what logind knows about sessions and seats, and
/// collects the signals that say something changed. Blocking, and used by one thread only: `LogindFollower`'s.
final class LogindBus {
    /// A session with a seat, as logind describes it.
    struct Session: Sendable, Hashable {
        var id: String
        var path: String
        var seat: String
        /// The Unix user's name.
        var user: String
        var active: Bool
        var lockedHint: Bool
    }

    /// What a signal says, in the order they arrived.
    enum Signal: Sendable, Hashable {
        /// Sessions, seats or their properties changed: read them again.
        case changed
        /// logind asked the session (by object path) to lock, or to unlock.
        case lock(path: String)
        case unlock(path: String)
        /// logind left the bus, or came (back) onto it.
        case logindGone
        case logindBack
    }

    /// Why a call failed: the bus is gone (reconnect), or logind did not answer (wait for it).
    enum Failure: Error, CustomStringConvertible {
        case bus(Int32)
        case logind(String)

        var description: String {
            switch self {
            case .bus(let code): String(cString: strerror(-code))
            case .logind(let message): message
            }
        }
    }

    static let service = "org.freedesktop.login1"
    static let managerPath = "/org/freedesktop/login1"
    static let manager = "org.freedesktop.login1.Manager"
    static let sessionInterface = "org.freedesktop.login1.Session"
    static let seatInterface = "org.freedesktop.login1.Seat"

    /// Where the match callback puts signals; read on the same thread, after `sd_bus_process` returns.
    private final class Inbox {
        var signals: [Signal] = []
    }

    private let bus: OpaquePointer
    private let inbox = Inbox()

    /// Connects to the system bus and subscribes to logind's signals.
    init() throws(Failure) {
        var bus: OpaquePointer?
        let opened = usher_sd_bus_open_system(&bus)
        guard opened >= 0, let bus else { throw .bus(opened) }
        self.bus = bus
        let context = Unmanaged.passUnretained(self.inbox).toOpaque()
        let matches = [
            // Properties of seats and sessions (ActiveSession, Active, LockedHint): systemd#5210, logind does not
            // always signal a seat's ActiveSession, so each session's Active is watched too.
            "type='signal',sender='\(Self.service)',interface='org.freedesktop.DBus.Properties',"
                + "member='PropertiesChanged',path_namespace='\(Self.managerPath)'",
            "type='signal',sender='\(Self.service)',interface='\(Self.sessionInterface)'",
            "type='signal',sender='\(Self.service)',interface='\(Self.manager)'",
            "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',"
                + "member='NameOwnerChanged',arg0='\(Self.service)'",
        ]
        for match in matches {
            // A floating slot (nil): the match lives as long as the connection.
            let added = usher_sd_bus_add_match(bus, nil, match, Self.received, context)
            guard added >= 0 else {
                _ = usher_sd_bus_flush_close_unref(bus)
                throw .bus(added)
            }
        }
    }

    deinit {
        _ = usher_sd_bus_flush_close_unref(self.bus)
    }

    /// The match callback: notes what the signal says, and nothing else (the calls it leads to are made after
    /// `sd_bus_process` returns, in order).
    private static let received: sd_bus_message_handler_t = { message, userdata, _ in
        guard let message, let userdata else { return 0 }
        let inbox = Unmanaged<Inbox>.fromOpaque(userdata).takeUnretainedValue()
        let member = usher_sd_bus_message_get_member(message).map { String(cString: $0) } ?? ""
        let path = usher_sd_bus_message_get_path(message).map { String(cString: $0) } ?? ""
        switch member {
        case "Lock": inbox.signals.append(.lock(path: path))
        case "Unlock": inbox.signals.append(.unlock(path: path))
        case "NameOwnerChanged":
            var owners: [String] = []
            for _ in 0..<3 {
                var text: UnsafePointer<CChar>?
                guard usher_sd_bus_message_read_basic(message, CChar(UInt8(ascii: "s")), &text) > 0, let text else {
                    return 0
                }
                owners.append(String(cString: text))
            }
            inbox.signals.append(owners[2].isEmpty ? .logindGone : .logindBack)
        default: inbox.signals.append(.changed)
        }
        return 0
    }

    /// Handles what the bus has received; answers the signals among it. Throws when the connection is gone.
    func process() throws(Failure) -> [Signal] {
        while true {
            let processed = usher_sd_bus_process(self.bus, nil)
            guard processed >= 0 else { throw .bus(processed) }
            if processed == 0 { break }
        }
        defer { self.inbox.signals.removeAll() }
        return self.inbox.signals
    }

    /// Waits until the bus has something to read (or a timeout of its own), or `wake` is readable. Answers whether
    /// `wake` is.
    func wait(wake: Int32) throws(Failure) -> Bool {
        let descriptor = usher_sd_bus_get_fd(self.bus)
        let events = usher_sd_bus_get_events(self.bus)
        guard descriptor >= 0 else { throw .bus(descriptor) }
        guard events >= 0 else { throw .bus(events) }
        var deadline: UInt64 = 0
        var timeout: Int32 = -1
        if usher_sd_bus_get_timeout(self.bus, &deadline) > 0, deadline != UInt64.max {
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            let nowMicroseconds = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
            timeout = deadline <= nowMicroseconds ? 0 : Int32(clamping: (deadline - nowMicroseconds + 999) / 1000)
        }
        var descriptors = [
            pollfd(fd: descriptor, events: Int16(truncatingIfNeeded: events), revents: 0),
            pollfd(fd: wake, events: Int16(POLLIN), revents: 0),
        ]
        let polled = poll(&descriptors, 2, timeout)
        guard polled >= 0 || errno == EINTR else { throw .bus(-errno) }
        return descriptors[1].revents != 0
    }

    /// Every session that has a seat, with its state.
    func sessions() throws(Failure) -> [Session] {
        let reply = try self.call(Self.managerPath, Self.manager, "ListSessions")
        defer { _ = usher_sd_bus_message_unref(reply) }
        var listed: [(id: String, user: String, seat: String, path: String)] = []
        try Self.check(usher_sd_bus_message_enter_container(reply, CChar(UInt8(ascii: "a")), "(susso)"))
        while try Self.check(usher_sd_bus_message_enter_container(reply, CChar(UInt8(ascii: "r")), "susso")) > 0 {
            let id = try Self.readString(reply, "s")
            var uid: UInt32 = 0
            try Self.check(usher_sd_bus_message_read_basic(reply, CChar(UInt8(ascii: "u")), &uid))
            let user = try Self.readString(reply, "s")
            let seat = try Self.readString(reply, "s")
            let path = try Self.readString(reply, "o")
            try Self.check(usher_sd_bus_message_exit_container(reply))
            if !seat.isEmpty { listed.append((id, user, seat, path)) }
        }
        return try listed.map { session throws(Failure) in
            Session(
                id: session.id,
                path: session.path,
                seat: session.seat,
                user: session.user,
                active: try self.flag(session.path, "Active"),
                lockedHint: try self.flag(session.path, "LockedHint")
            )
        }
    }

    /// The seats logind knows, by name, with the id of each one's active session ("" when none).
    func seats() throws(Failure) -> [String: String] {
        let reply = try self.call(Self.managerPath, Self.manager, "ListSeats")
        defer { _ = usher_sd_bus_message_unref(reply) }
        var seats: [(name: String, path: String)] = []
        try Self.check(usher_sd_bus_message_enter_container(reply, CChar(UInt8(ascii: "a")), "(so)"))
        while try Self.check(usher_sd_bus_message_enter_container(reply, CChar(UInt8(ascii: "r")), "so")) > 0 {
            let name = try Self.readString(reply, "s")
            let path = try Self.readString(reply, "o")
            try Self.check(usher_sd_bus_message_exit_container(reply))
            seats.append((name, path))
        }
        var active: [String: String] = [:]
        for seat in seats { active[seat.name] = try self.activeSession(seat.path) }
        return active
    }

    // MARK: - Calls

    private func activeSession(_ path: String) throws(Failure) -> String {
        var error = sd_bus_error(name: nil, message: nil, _need_free: 0)
        defer { usher_sd_bus_error_free(&error) }
        var reply: OpaquePointer?
        let called = usher_sd_bus_get_property(
            self.bus,
            Self.service,
            path,
            Self.seatInterface,
            "ActiveSession",
            &error,
            &reply,
            "(so)"
        )
        guard called >= 0, let reply else { throw Self.failure(called, error) }
        defer { _ = usher_sd_bus_message_unref(reply) }
        try Self.check(usher_sd_bus_message_enter_container(reply, CChar(UInt8(ascii: "r")), "so"))
        return try Self.readString(reply, "s")
    }

    private func flag(_ path: String, _ property: String) throws(Failure) -> Bool {
        var error = sd_bus_error(name: nil, message: nil, _need_free: 0)
        defer { usher_sd_bus_error_free(&error) }
        // D-Bus booleans are 32-bit on the wire: sd-bus writes an int.
        var value: Int32 = 0
        let called = usher_sd_bus_get_property_trivial(
            self.bus,
            Self.service,
            path,
            Self.sessionInterface,
            property,
            &error,
            CChar(UInt8(ascii: "b")),
            &value
        )
        guard called >= 0 else { throw Self.failure(called, error) }
        return value != 0
    }

    private func call(_ path: String, _ interface: String, _ member: String) throws(Failure) -> OpaquePointer {
        var error = sd_bus_error(name: nil, message: nil, _need_free: 0)
        defer { usher_sd_bus_error_free(&error) }
        var reply: OpaquePointer?
        let called = usher_sd_bus_call_method(self.bus, Self.service, path, interface, member, &error, &reply)
        guard called >= 0, let reply else { throw Self.failure(called, error) }
        return reply
    }

    /// A failed call: logind's (or the bus daemon's) error when it answered one, else the connection's.
    private static func failure(_ code: Int32, _ error: sd_bus_error) -> Failure {
        guard let name = error.name else { return .bus(code) }
        let message = error.message.map { String(cString: $0) } ?? ""
        return .logind("\(String(cString: name)): \(message)")
    }

    @discardableResult
    private static func check(_ result: Int32) throws(Failure) -> Int32 {
        guard result >= 0 else { throw .logind("unexpected answer from logind: \(String(cString: strerror(-result)))") }
        return result
    }

    private static func readString(_ message: OpaquePointer, _ type: Unicode.Scalar) throws(Failure) -> String {
        var text: UnsafePointer<CChar>?
        try self.check(usher_sd_bus_message_read_basic(message, CChar(UInt8(ascii: type)), &text))
        return text.map { String(cString: $0) } ?? ""
    }
}
