import UsherCore

/// `[unix_users]`: whether usher's users are Unix users (served through systemd's `io.systemd.UserDatabase`), where,
/// and what their accounts look like. See docs/unix-users.md.
package struct UnixUsersConfiguration: Sendable, Hashable {
    package var enabled = false
    /// `socket`; nil: `/run/systemd/userdb/io.usher.Users` under systemd, else `io.usher.Users` next to the main
    /// socket (`resolvedSocketPath`).
    package var socket: String?
    package var settings = UnixUserSettings()

    package init() {}

    /// The default socket's directory under systemd, where `nss-systemd` and `userdbctl` look.
    package static let userdbDirectory = "/run/systemd/userdb"

    /// Where the user database socket listens: `socket`, else in `/run/systemd/userdb` when systemd runs usherd
    /// (`RUNTIME_DIRECTORY` set, as for every service with `RuntimeDirectory=`), else next to the main socket.
    package func resolvedSocketPath(socketPath: String, environment: [String: String]) -> String {
        if let socket { return socket }
        if let runtime = environment["RUNTIME_DIRECTORY"], !runtime.isEmpty {
            return "\(Self.userdbDirectory)/\(UnixUserDirectory.serviceName)"
        }
        guard let slash = socketPath.lastIndex(of: "/") else { return UnixUserDirectory.serviceName }
        return socketPath[...slash] + UnixUserDirectory.serviceName
    }

    /// Ranges no other allocator may share (systemd's `UIDS-GIDS.md`): a uid of usher's there would one day be
    /// someone else's too.
    static let forbiddenRanges: [(range: ClosedRange<UInt32>, name: String)] = [
        (61_184...65_519, "systemd's dynamic range (DynamicUser=, 61184-65519)"),
        (65_534...65_535, "nobody and the 16-bit (uid_t) -1 (65534-65535)"),
        (524_288...UInt32.max, "the container range (524288 and above)"),
    ]

    /// `uid_range`: `"FIRST-LAST"`, decimal, FIRST ≤ LAST, above the system range (`0-999`, or login.defs'
    /// `SYS_UID_MAX` when higher: `systemAccountMaximum`) and outside systemd's dynamic and container ranges. The
    /// reason it is refused, nil when it is fine.
    static func uidRangeProblem(_ text: String, systemAccountMaximum: UInt32 = 999) -> String? {
        guard let range = Self.parseUIDRange(text) else {
            return "must be \"FIRST-LAST\", two uids with FIRST not above LAST, such as \"60000-60999\""
        }
        if range.lowerBound <= systemAccountMaximum {
            return "overlaps the system range (0-\(systemAccountMaximum), login.defs' SYS_UID_MAX)"
        }
        for forbidden in Self.forbiddenRanges where forbidden.range.overlaps(range) {
            return "overlaps \(forbidden.name)"
        }
        return nil
    }

    static func parseUIDRange(_ text: String) -> ClosedRange<UInt32>? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2,
            parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }),
            let first = UInt32(parts[0]), let last = UInt32(parts[1]), first <= last
        else { return nil }
        return first...last
    }

    /// login.defs' `SYS_UID_MAX` (the end of the system range useradd allocates from), from the file's text.
    static func systemAccountMaximum(loginDefs text: String) -> UInt32? {
        for line in text.split(whereSeparator: \.isNewline) {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            if fields.count >= 2, fields[0] == "SYS_UID_MAX", let value = UInt32(fields[1]) { return value }
        }
        return nil
    }
}

extension DaemonConfiguration {
    /// `[unix_users]`, each key checked: `uid_range` (see `uidRangeProblem`), `shell` and `home` absolute paths
    /// (`home` with `%u`, `%U` and `%%` only), `groups` valid group names.
    static func unixUsers(_ section: inout ConfigSection) throws(ConfigurationError) -> UnixUsersConfiguration {
        var configuration = UnixUsersConfiguration()
        configuration.enabled = try section.bool("enabled") ?? false
        if let socket = try section.string("socket") {
            guard socket.hasPrefix("/"), !socket.hasSuffix("/") else {
                throw section.error("socket", "must be an absolute path to the socket file")
            }
            configuration.socket = socket
        }
        if let range = try section.string("uid_range") {
            if let problem = UnixUsersConfiguration.uidRangeProblem(range) { throw section.error("uid_range", problem) }
            configuration.settings.uidRange = UnixUsersConfiguration.parseUIDRange(range)!
        }
        if let shell = try section.string("shell") {
            guard shell.hasPrefix("/"), !shell.utf8.contains(UInt8(ascii: ":")), !shell.contains(where: \.isNewline)
            else {
                throw section.error("shell", "must be an absolute path, such as \"/bin/bash\"")
            }
            configuration.settings.shell = shell
        }
        if let home = try section.string("home") {
            guard home.hasPrefix("/"), !home.utf8.contains(UInt8(ascii: ":")), !home.contains(where: \.isNewline),
                Self.isHomeTemplate(home)
            else {
                throw section.error("home", "must be an absolute path; %u is the user name, %U the uid, %% a %")
            }
            configuration.settings.homeTemplate = home
        }
        if let groups = try section.stringArray("groups") {
            for group in groups where !Self.isGroupName(group) {
                throw section.error("groups", "\"\(group)\" is not a valid group name")
            }
            configuration.settings.groups = groups
        }
        return configuration
    }

    private static func isHomeTemplate(_ template: String) -> Bool {
        var escaped = false
        for character in template {
            if escaped {
                guard "uU%".contains(character) else { return false }
                escaped = false
            } else if character == "%" {
                escaped = true
            }
        }
        return !escaped
    }

    /// A group name as `/etc/group` and systemd take it (relaxed: Debian allows more than user names do).
    private static func isGroupName(_ name: String) -> Bool {
        guard let first = name.utf8.first, name.utf8.count <= 31, first != UInt8(ascii: "-") else { return false }
        return name.utf8.allSatisfy { byte in
            (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "_")
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
        }
    }
}
