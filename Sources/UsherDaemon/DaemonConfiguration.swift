import Logging
import NIOCore
import UsherCore
import UsherProtocol
import UsherProviders
import UsherServer

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

/// Everything `usherd` reads from its configuration file. Every key is optional; the defaults are documented in
/// `config/usherd.toml` and docs/configuration.md.
package struct DaemonConfiguration: Sendable {
    package enum Provider: Sendable, Hashable {
        case local(name: String, LocalProviderConfiguration)
        case oidc(name: String, OIDCProviderConfiguration)

        package var name: String {
            switch self {
            case .local(let name, _): name
            case .oidc(let name, _): name
            }
        }
    }

    /// `[daemon] socket` (or `--socket`); nil: the default for the environment (see `resolvedSocketPath`).
    package var socket: String?
    /// `[daemon] socket` as the file says it, before command-line overrides (to tell what a reload changed).
    package var fileSocket: String?
    /// `[daemon] varlink_socket`: where the Varlink socket listens; "" turns it off; nil: `io.usher.Session` next to
    /// the socket (see `resolvedVarlinkSocketPath`).
    package var varlinkSocket: String?
    /// `[daemon] socket_mode`.
    package var socketMode: UInt32 = 0o600
    /// `[daemon] state_directory` (or `--state-directory`); nil: the default for the environment.
    package var stateDirectory: String?
    /// `[daemon] state_directory` as the file says it, before command-line overrides.
    package var fileStateDirectory: String?
    /// `[daemon] token_encryption_key`: the key file that seals tokens at rest; nil: tokens are stored unencrypted
    /// (in the 0600 database in the 0700 state directory).
    package var tokenEncryptionKey: String?
    /// `[daemon] default_provider`.
    package var defaultProvider = "local"
    /// `[daemon] log_level`.
    package var logLevel: Logger.Level = .info
    /// `[daemon] password_hash_cost`: the base-2 logarithm of scrypt's N for new password hashes.
    package var passwordHashCost = PasswordHasher.Parameters.standard.logN
    /// `[limits]`.
    package var limits = ServerLimits()
    /// `[[access.rule]]`: who besides root and the daemon's own user may do what.
    package var accessRules: [AccessRule] = []
    /// `[login_throttle]`.
    package var loginThrottle = LoginThrottleSettings()
    /// `[seats]`.
    package var seats = SeatConfiguration()
    /// `[leases]`.
    package var leases = LeaseConfiguration()
    /// `[unix_users]`.
    package var unixUsers = UnixUsersConfiguration()
    /// `[tokens] refresh_margin`.
    package var refreshMarginMilliseconds: Int64 = 5 * 60_000
    /// `[providers.NAME]`, sorted by name. Without any section, one local provider named `local`.
    package var providers: [Provider] = [.local(name: "local", LocalProviderConfiguration(issuer: "usherd:local"))]
    /// The secret files the configuration named and usherd read (`client_secret_file`), for the start-up warning
    /// about ones that others may read.
    package var secretFiles: [(setting: String, path: String)] = []

    package init() {}

    /// Parses a configuration file's text. Unknown keys and bad values throw an error naming the key and the file.
    package init(toml text: String, file: String) throws(ConfigurationError) {
        var root = try ConfigSection.parse(text, file: file)
        if var daemon = try root.section("daemon") {
            self.socket = try daemon.string("socket")
            self.fileSocket = self.socket
            self.varlinkSocket = try daemon.string("varlink_socket")
            if let path = self.varlinkSocket, !path.isEmpty, !path.hasPrefix("/") {
                throw daemon.error("varlink_socket", "must be an absolute path, or \"\" to turn the Varlink socket off")
            }
            if let mode = try daemon.string("socket_mode") {
                guard mode.count <= 4, let parsed = UInt32(mode, radix: 8), parsed <= 0o777 else {
                    throw daemon.error("socket_mode", "must be an octal file mode such as \"0600\" or \"0660\"")
                }
                self.socketMode = parsed
            }
            self.stateDirectory = try daemon.string("state_directory")
            self.fileStateDirectory = self.stateDirectory
            self.defaultProvider = try daemon.string("default_provider") ?? self.defaultProvider
            self.tokenEncryptionKey = try daemon.string("token_encryption_key")
            self.passwordHashCost = try daemon.int("password_hash_cost", in: 10...20) ?? self.passwordHashCost
            if let level = try daemon.string("log_level") {
                guard let parsed = Logger.Level(rawValue: level) else {
                    throw daemon.error(
                        "log_level",
                        "must be one of \(Logger.Level.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", "))"
                    )
                }
                self.logLevel = parsed
            }
            try daemon.finish()
        }
        if var limits = try root.section("limits") {
            self.limits.maximumLineBytes =
                try limits.int("max_line_bytes", in: 1024...16_777_216) ?? self.limits.maximumLineBytes
            self.limits.maximumJSONDepth = try limits.int("max_json_depth", in: 2...512) ?? self.limits.maximumJSONDepth
            self.limits.maximumJSONMembers =
                try limits.int("max_json_members", in: 16...65_536) ?? self.limits.maximumJSONMembers
            self.limits.maximumConnections =
                try limits.int("max_connections", in: 1...1_000_000) ?? self.limits.maximumConnections
            self.limits.maximumConnectionsPerUID =
                try limits.int("max_connections_per_uid", in: 1...1_000_000) ?? self.limits.maximumConnectionsPerUID
            self.limits.reservedConnections =
                try limits.int("reserved_connections", in: 1...10_000) ?? self.limits.reservedConnections
            if let idle = try limits.duration("idle_timeout", in: 1000...(7 * 86_400_000)) {
                self.limits.idleTimeout = .milliseconds(idle)
            }
            self.limits.maximumPendingBytes =
                try limits.int("max_pending_bytes", in: 4096...1_073_741_824) ?? self.limits.maximumPendingBytes
            self.limits.maximumLogRecordsPerSecond =
                try limits.int("max_log_records_per_second", in: 1...100_000) ?? self.limits.maximumLogRecordsPerSecond
            if let bytes = try limits.int("max_hashed_executable_bytes", in: 0...(1 << 40)) {
                self.limits.maximumHashedExecutableBytes = Int64(bytes)
            }
            try limits.finish()
        }
        if var access = try root.section("access") {
            self.accessRules = try Self.accessRules(&access)
            try access.finish()
        }
        if var throttle = try root.section("login_throttle") {
            self.loginThrottle = try Self.loginThrottle(&throttle)
            try throttle.finish()
        }
        if var seats = try root.section("seats") {
            self.seats = try Self.seats(&seats)
            try seats.finish()
        }
        if var leases = try root.section("leases") {
            self.leases.maximumDelayMilliseconds =
                try leases.duration("max_delay", in: 0...LeaseConfiguration.maximumDelayLimitMilliseconds)
                ?? self.leases.maximumDelayMilliseconds
            self.leases.maximumPerUID = try leases.int("max_per_uid", in: 1...4096) ?? self.leases.maximumPerUID
            try leases.finish()
        }
        if var unixUsers = try root.section("unix_users") {
            self.unixUsers = try Self.unixUsers(&unixUsers)
            try unixUsers.finish()
        }
        if var tokens = try root.section("tokens") {
            self.refreshMarginMilliseconds =
                try tokens.duration("refresh_margin", in: 0...86_400_000) ?? self.refreshMarginMilliseconds
            try tokens.finish()
        }
        if var providers = try root.section("providers") {
            var parsed: [Provider] = []
            for name in providers.keys {
                guard var section = try providers.section(name) else { continue }
                guard Self.isValidProviderName(name) else {
                    throw section.error(nil, "provider names are 1 to 64 characters of a-z, A-Z, 0-9, '-', '_'")
                }
                switch try section.string("type") {
                case "local":
                    parsed.append(
                        .local(name: name, try Self.localProvider(name: name, &section, secretFiles: &self.secretFiles))
                    )
                case "oidc":
                    parsed.append(.oidc(name: name, try Self.oidcProvider(&section, secretFiles: &self.secretFiles)))
                case nil:
                    throw section.error("type", "is required (\"local\" or \"oidc\")")
                case let other?:
                    throw section.error("type", "unknown provider type \"\(other)\" (supported: \"local\", \"oidc\")")
                }
                try section.finish()
            }
            try providers.finish()
            if !parsed.isEmpty { self.providers = parsed }
        }
        try root.finish()
        guard self.providers.contains(where: { $0.name == self.defaultProvider }) else {
            throw ConfigurationError(
                file: file,
                key: "daemon.default_provider",
                message: "no provider named \"\(self.defaultProvider)\" is configured"
            )
        }
    }

    /// `[[access.rule]]` entries: exactly one of `uid`, `user`, `group`, `allow`, a list of permissions, and
    /// optionally `seats` and program conditions (`ProgramCondition.read`). User
    /// and group names are resolved now, so a typo is an error naming the rule, not a rule that never matches.
    private static func accessRules(_ access: inout ConfigSection) throws(ConfigurationError) -> [AccessRule] {
        var rules: [AccessRule] = []
        for (index, var rule) in try access.tables("rule").enumerated() {
            let uid = try rule.int("uid", in: 0...Int(UInt32.max - 1))
            let user = try rule.string("user")
            let group = try rule.string("group")
            let principal: AccessRule.Principal
            switch (uid, user, group) {
            case (let uid?, nil, nil):
                principal = .uid(UInt32(uid))
            case (nil, let user?, nil):
                guard let resolved = SystemAccounts.uid(ofUser: user) else {
                    throw rule.error("user", "no user named \"\(user)\" on this system")
                }
                principal = .user(name: user, uid: resolved)
            case (nil, nil, let group?):
                guard let resolved = SystemAccounts.gid(ofGroup: group) else {
                    throw rule.error("group", "no group named \"\(group)\" on this system")
                }
                principal = .group(name: group, gid: resolved)
            default:
                throw rule.error(nil, "rule \(index + 1) needs exactly one of uid, user or group")
            }
            guard let names = try rule.stringArray("allow") else {
                throw rule.error("allow", "is required: a list of \"read\", \"token\", \"manage\"")
            }
            var allow = Set<Permission>()
            for name in names {
                guard let permission = Permission(rawValue: name) else {
                    throw rule.error("allow", "unknown permission \"\(name)\" (read, token, manage)")
                }
                allow.insert(permission)
            }
            let seats = try rule.stringArray("seats").map(Set.init)
            if let seats, seats.isEmpty { throw rule.error("seats", "must name at least one seat (or be left out)") }
            let program = try ProgramCondition.read(from: &rule)
            let narrowing = try Self.tokenNarrowing(&rule, allow: allow)
            try rule.finish()
            rules.append(AccessRule(principal, allow: allow, seats: seats, program: program, narrowing: narrowing))
        }
        return rules
    }

    /// `audience` and `scopes` of a rule: the narrowed tokens its programs get (docs/least-privilege.md); nil when the
    /// rule has neither.
    private static func tokenNarrowing(
        _ rule: inout ConfigSection,
        allow: Set<Permission>
    ) throws(ConfigurationError) -> TokenAudience? {
        let audience = try rule.string("audience")
        let scopes = try rule.stringArray("scopes")
        if let audience {
            guard (1...TokenAudience.maximumAudienceLength).contains(audience.utf8.count),
                audience.utf8.allSatisfy({ (0x21...0x7E).contains($0) })
            else { throw rule.error("audience", "must be a URI or a name: printable ASCII without spaces") }
        }
        if let scopes {
            guard !scopes.isEmpty else { throw rule.error("scopes", "must name at least one scope (or be left out)") }
            if let bad = scopes.first(where: { !TokenAudience.isScopeToken($0) }) {
                throw rule.error(
                    "scopes",
                    "\"\(bad.prefix(64))\" is not a scope: printable ASCII without spaces, quotes or backslashes"
                )
            }
        }
        guard audience != nil || scopes != nil else { return nil }
        guard allow.contains(.token) else {
            throw rule.error(
                audience != nil ? "audience" : "scopes",
                "narrows tokens, so the rule must allow \"token\""
            )
        }
        return TokenAudience(audience: audience, scopes: scopes)
    }

    private static func seats(_ section: inout ConfigSection) throws(ConfigurationError) -> SeatConfiguration {
        var seats = SeatConfiguration()
        if let source = try section.string("source") {
            guard let parsed = SeatConfiguration.Source(rawValue: source) else {
                throw section.error("source", "must be \"logind\" or \"config\"")
            }
            seats.source = parsed
        }
        seats.names = try section.stringArray("names") ?? []
        seats.defaultSeat = try section.string("default") ?? seats.defaultSeat
        for name in seats.names + [seats.defaultSeat] where !Self.isValidSeatName(name) {
            throw section.error("names", "\"\(name.prefix(64))\" is not a seat name (1 to 64 of a-z A-Z 0-9 - _ .)")
        }
        try Self.readFollow(&section, into: &seats)
        return seats
    }

    /// Seat names as logind makes them (`seat0`, `seat-1`), and short readable ones (`rear-left`).
    static func isValidSeatName(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count)
            && name.utf8.allSatisfy { byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                    || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-")
                    || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
            }
    }

    private static func isValidProviderName(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count)
            && name.unicodeScalars.allSatisfy {
                $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-" || $0 == "_")
            }
    }

    private static func localProvider(
        name: String,
        _ section: inout ConfigSection,
        secretFiles: inout [(setting: String, path: String)]
    ) throws(ConfigurationError)
        -> LocalProviderConfiguration
    {
        var configuration = LocalProviderConfiguration(issuer: "usherd:\(name)")
        configuration.accessTokenLifetimeMilliseconds =
            try section.duration("access_token_lifetime", in: 1000...(7 * 86_400_000))
            ?? configuration.accessTokenLifetimeMilliseconds
        configuration.refreshTokenLifetimeMilliseconds =
            try section.duration("refresh_token_lifetime", in: 1000...(3650 * 86_400_000))
            ?? configuration.refreshTokenLifetimeMilliseconds
        configuration.allowAnonymous = try section.bool("allow_anonymous") ?? configuration.allowAnonymous
        configuration.allowRegistration = try section.bool("allow_registration") ?? configuration.allowRegistration
        configuration.issuer = try section.string("issuer") ?? configuration.issuer
        configuration.dpop = try section.bool("dpop") ?? configuration.dpop
        try Self.outsideCredentials(&section, into: &configuration, secretFiles: &secretFiles)
        try Self.registration(&section, into: &configuration)
        return configuration
    }

    /// Reads and parses a configuration file.
    package static func load(path: String) throws(ConfigurationError) -> DaemonConfiguration {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ConfigurationError(file: path, key: nil, message: "cannot read the file")
        }
        return try DaemonConfiguration(toml: text, file: path)
    }

    // MARK: Paths

    /// The first directory of a systemd directory variable (`STATE_DIRECTORY=/var/lib/a:/var/lib/b`).
    private static func systemdDirectory(_ variable: String, _ environment: [String: String]) -> String? {
        guard let value = environment[variable], !value.isEmpty else { return nil }
        return value.split(separator: ":").first.map(String.init)
    }

    /// The token encryption key file: an absolute path as it is; a bare name is a systemd credential, looked up in
    /// `$CREDENTIALS_DIRECTORY` (`LoadCredential=`/`LoadCredentialEncrypted=`).
    package func resolvedTokenEncryptionKey(environment: [String: String]) -> String? {
        guard let key = self.tokenEncryptionKey else { return nil }
        if key.hasPrefix("/") { return key }
        if let credentials = Self.systemdDirectory("CREDENTIALS_DIRECTORY", environment) {
            return "\(credentials)/\(key)"
        }
        return key
    }

    /// `socket`, else `$RUNTIME_DIRECTORY/usher.sock`, else `$XDG_RUNTIME_DIR/usher/usher.sock` (non-root), else
    /// `/run/usher/usher.sock`.
    package func resolvedSocketPath(environment: [String: String], uid: UInt32) -> String {
        if let socket { return socket }
        if let runtime = Self.systemdDirectory("RUNTIME_DIRECTORY", environment) { return "\(runtime)/usher.sock" }
        if uid != 0, let xdg = environment["XDG_RUNTIME_DIR"], !xdg.isEmpty { return "\(xdg)/usher/usher.sock" }
        return "/run/usher/usher.sock"
    }

    /// `varlink_socket`, else `io.usher.Session` in the directory of the socket at `socketPath`; nil when
    /// `varlink_socket = ""` turns the Varlink socket off.
    package func resolvedVarlinkSocketPath(socketPath: String) -> String? {
        if let varlinkSocket { return varlinkSocket.isEmpty ? nil : varlinkSocket }
        guard let slash = socketPath.lastIndex(of: "/") else { return "io.usher.Session" }
        return socketPath[...slash] + "io.usher.Session"
    }

    /// `state_directory`, else `$STATE_DIRECTORY`, else `$XDG_STATE_HOME/usher` (non-root, default
    /// `~/.local/state/usher`), else `/var/lib/usher`.
    package func resolvedStateDirectory(environment: [String: String], uid: UInt32) -> String {
        if let stateDirectory { return stateDirectory }
        if let state = Self.systemdDirectory("STATE_DIRECTORY", environment) { return state }
        if uid != 0 {
            if let xdg = environment["XDG_STATE_HOME"], !xdg.isEmpty { return "\(xdg)/usher" }
            if let home = environment["HOME"], !home.isEmpty { return "\(home)/.local/state/usher" }
        }
        return "/var/lib/usher"
    }
}
