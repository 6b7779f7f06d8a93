import CUsherLinux
import Glibc
import UsherServer

extension ProgramCondition {
    /// The program conditions of one `[[access.rule]]`: `executable` (an absolute path), `executable_sha256` (64
    /// hexadecimal digits), `unit` and `user_unit` (systemd unit names), and `namespace` (`"host"`, the default, or
    /// `"any"`) which says where they may hold; nil when the rule has none.
    static func read(from rule: inout ConfigSection) throws(ConfigurationError) -> ProgramCondition? {
        var condition = ProgramCondition()
        if let executable = try rule.string("executable") {
            guard executable.hasPrefix("/"), !executable.utf8.contains(0), executable.count <= 4096 else {
                throw rule.error("executable", "must be an absolute path, as /proc/PID/exe shows it (links resolved)")
            }
            condition.executable = executable
        }
        if let digest = try rule.string("executable_sha256") {
            let lowercased = digest.lowercased()
            guard lowercased.utf8.count == 64, lowercased.utf8.allSatisfy(Self.isHexDigit) else {
                throw rule.error("executable_sha256", "must be a SHA-256 digest: 64 hexadecimal digits (sha256sum)")
            }
            condition.executableSHA256 = lowercased
        }
        condition.unit = try Self.unitName(&rule, "unit")
        condition.userUnit = try Self.unitName(&rule, "user_unit")
        let hasConditions = condition != ProgramCondition()
        if let namespaces = try rule.string("namespace") {
            guard let value = ProgramCondition.Namespaces(rawValue: namespaces) else {
                throw rule.error("namespace", "must be \"host\" or \"any\"")
            }
            guard hasConditions else {
                throw rule.error(
                    "namespace",
                    "says where program conditions hold: give it with executable, executable_sha256, unit or user_unit"
                )
            }
            condition.namespaces = value
        }
        return hasConditions ? condition : nil
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
    }

    /// A unit name as systemd writes it: a name and a type suffix (`kiosk-app.service`, `app-foo.scope`), of the
    /// characters systemd allows in unit names, at most 255 bytes.
    private static func unitName(_ rule: inout ConfigSection, _ key: String) throws(ConfigurationError) -> String? {
        guard let name = try rule.string(key) else { return nil }
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:-_.\\@".utf8)
        let suffixes = [".service", ".scope", ".socket", ".slice", ".mount", ".timer", ".target", ".path", ".swap"]
        guard name.utf8.count <= 255, name.utf8.allSatisfy(allowed.contains),
            let suffix = suffixes.first(where: name.hasSuffix), name.count > suffix.count
        else {
            throw rule.error(key, "must be a systemd unit name such as \"kiosk-app.service\" (name and type suffix)")
        }
        return name
    }
}

extension AccessPolicy {
    /// The warning to log when rules have program conditions that usherd cannot check: for other users' peers, when
    /// it cannot read their `/proc/PID/exe` (that takes root or `CAP_SYS_PTRACE`, and `ProtectProc=invisible` without
    /// it hides their processes altogether); for every peer, when the kernel's socket diagnostics cannot be asked
    /// which descriptor is a peer's end of its connection (no `unix_diag`, or `AF_NETLINK` not allowed). nil when there
    /// is nothing to warn about.
    var programVisibilityWarning: String? {
        guard self.hasProgramRules else { return nil }
        if let failure = Self.socketDiagnosticsFailure {
            return "rules with executable, executable_sha256, unit or user_unit match no program: usherd cannot ask "
                + "the kernel's socket diagnostics (unix_diag) which descriptor holds a connection (\(failure); see "
                + "docs/least-privilege.md)"
        }
        var buffer = [CChar](repeating: 0, count: 256)
        guard getuid() != 0, readlink("/proc/1/exe", &buffer, buffer.count) < 0 else { return nil }
        return "rules with executable, executable_sha256, unit or user_unit never match other users' programs: "
            + "usherd cannot read their /proc/PID/exe (it needs CAP_SYS_PTRACE; see docs/least-privilege.md)"
    }

    /// Why unix_diag cannot be asked about a socket pair of usherd's own, as program identification asks it; nil when it
    /// can.
    private static var socketDiagnosticsFailure: String? {
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            return nil
        }
        defer {
            close(pair[0])
            close(pair[1])
        }
        // The question identification asks: which socket is connected to the one with this cookie.
        var cookie: UInt64 = 0
        var length = socklen_t(MemoryLayout<UInt64>.size)
        guard getsockopt(pair[0], SOL_SOCKET, usher_so_cookie, &cookie, &length) == 0 else { return nil }
        var peer: UInt32 = 0
        let result = usher_unix_diag_peer_of_cookie(cookie, &peer)
        guard result < 0 else { return nil }
        return String(cString: strerror(-result))
    }
}
