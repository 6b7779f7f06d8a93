import CSystemd

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The daemon's side of systemd's service protocol, through libsystemd.
///
/// Every call is a no-op when systemd did not ask for it (no `NOTIFY_SOCKET`, no `LISTEN_FDS`, no `WATCHDOG_USEC`),
/// so the same binary runs unchanged in a terminal, under `systemd-socket-activate`, or as a unit.
enum Systemd {
    /// Sends a state change (`READY=1`, `STATUS=...`, ...) to the service manager. `sd_notifyf` is variadic and
    /// cannot be called from Swift, so the message is built here.
    ///
    /// Each field is one `KEY=value` line of the message, so a value holding a line feed would add assignments of its
    /// own (`STATUS=m@x\nWATCHDOG=trigger\nSTOPPING=1`, from an email claim), and a NUL would cut the message short.
    /// Every value is therefore escaped as log fields are (`LogText`: control characters become `\n`, `\u001b`, ...)
    /// and bounded; keys are the daemon's own constants.
    static func notify(_ fields: [String]) {
        guard !fields.isEmpty else { return }
        _ = self.message(fields).withCString { usher_sd_notify(0, $0) }
    }

    /// Fails when systemd asked for its protocol (`NOTIFY_SOCKET`, `LISTEN_FDS`) and libsystemd, which usherd opens on
    /// first use (Sources/CSystemd), cannot be loaded: without it the daemon would never say it is ready and would
    /// ignore the sockets it was handed. Without systemd, nothing is loaded here and nothing is needed.
    static func requireLibraryWhenAsked() throws {
        guard getenv("NOTIFY_SOCKET") != nil || getenv("LISTEN_FDS") != nil else { return }
        if let failure = usher_sd_load_error() {
            throw SystemdLibraryError(description: "systemd started usherd, but \(String(cString: failure))")
        }
    }

    /// The longest value sent in one field (`STATUS=` is shown by `systemctl status`, not meant for essays).
    static let maximumValueBytes = 1024

    /// The notification message for `fields`: one `KEY=value` line each, values escaped and bounded.
    static func message(_ fields: [String]) -> String {
        fields.map { field in
            guard let equals = field.firstIndex(of: "=") else {
                return LogText.escaped(field, limit: Self.maximumValueBytes)
            }
            let key = field[..<equals]
            let value = field[field.index(after: equals)...]
            return String(key) + "=" + LogText.escaped(value, limit: Self.maximumValueBytes)
        }.joined(separator: "\n")
    }

    static func ready(status: String) {
        self.notify(["READY=1", "STATUS=\(status)"])
    }

    static func status(_ status: String) {
        self.notify(["STATUS=\(status)"])
    }

    /// Tells systemd a reload has started (`RELOADING=1` with the monotonic time, as `Type=notify-reload` expects).
    static func reloading() {
        self.notify(["RELOADING=1", "MONOTONIC_USEC=\(self.monotonicMicroseconds())"])
    }

    static func stopping() {
        self.notify(["STOPPING=1", "STATUS=stopping"])
    }

    static func watchdogPing() {
        self.notify(["WATCHDOG=1"])
    }

    /// Asks for more time for start-up work (migrations, loading many users).
    static func extendTimeout(seconds: Int) {
        self.notify(["EXTEND_TIMEOUT_USEC=\(UInt64(seconds) * 1_000_000)"])
    }

    /// Explains a start-up failure before the process exits.
    static func failed(status: String, errno code: Int32?) {
        var fields = ["STATUS=\(status)"]
        if let code { fields.append("ERRNO=\(code)") }
        self.notify(fields)
    }

    static func monotonicMicroseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
    }

    /// The watchdog interval, when systemd set `WATCHDOG_USEC` for this process (`WATCHDOG_PID` unset or ours).
    static func watchdogInterval() -> Duration? {
        var microseconds: UInt64 = 0
        guard usher_sd_watchdog_enabled(0, &microseconds) > 0, microseconds > 0 else { return nil }
        return .microseconds(Int64(microseconds))
    }

    /// The listening socket systemd handed over under exactly this name (`FileDescriptorName=`), with no fallback:
    /// for the sockets besides the main one, which must not take the main one's descriptor. Leaves the `LISTEN_*`
    /// variables for `listeningDescriptor(named:)`.
    static func listeningDescriptor(exactlyNamed name: String) -> CInt? {
        let names = Self.listeningNames(unsetEnvironment: false)
        return names.firstIndex(of: name).map { SD_LISTEN_FDS_START + CInt($0) }
    }

    /// The listening socket systemd passed (socket activation): the one named `name` (`FileDescriptorName=`), or the
    /// only one when it has another name (not the Varlink socket's, nor the user database's). The `LISTEN_*`
    /// variables are removed so that processes the daemon starts do not inherit them.
    static func listeningDescriptor(named name: String) -> CInt? {
        let names = Self.listeningNames(unsetEnvironment: true)
        if let index = names.firstIndex(of: name) { return SD_LISTEN_FDS_START + CInt(index) }
        return names.count == 1 && names[0] != "varlink" && names[0] != "userdb" ? SD_LISTEN_FDS_START : nil
    }

    /// The names of the descriptors systemd passed, in order ("" for one without a name); none without activation.
    private static func listeningNames(unsetEnvironment: Bool) -> [String] {
        var names: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = nil
        let count = usher_sd_listen_fds_with_names(unsetEnvironment ? 1 : 0, &names)
        guard count > 0 else { return [] }
        defer {
            if let names {
                for index in 0..<Int(count) { free(names[index]) }
                free(names)
            }
        }
        return (0..<Int(count)).map { index in names?[index].map { String(cString: $0) } ?? "" }
    }

    /// The path a listening Unix socket handed over by the service manager is bound to, as the kernel reports it: the
    /// unit's `ListenStream=` may name another path than usherd's default. Nil for an unnamed or abstract socket.
    static func boundPath(of descriptor: CInt) -> String? {
        var address = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let status = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        let pathOffset = MemoryLayout<sockaddr_un>.offset(of: \.sun_path) ?? 2
        guard status == 0, address.sun_family == sa_family_t(AF_UNIX), Int(length) > pathOffset else { return nil }
        let path = withUnsafeBytes(of: &address.sun_path) { raw in
            let bytes = raw.prefix(Int(length) - pathOffset)
            return bytes.first == 0 ? nil : String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
        return path
    }
}

/// libsystemd cannot be loaded in a daemon that systemd started (see `Systemd.requireLibraryWhenAsked`).
package struct SystemdLibraryError: Error, CustomStringConvertible {
    package var description: String
}
