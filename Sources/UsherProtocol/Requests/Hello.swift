/// `hello`: who the daemon is and what this connection may do. Always allowed.
public struct HelloRequest: UsherRequest {
    public static let method = Method.hello
    public init() {}
    public init(params: Params) throws(ResponseError) {}
    public var params: Params { Params() }

    public struct Result: Sendable, Hashable, Codable {
        public var `protocol`: Int
        public var server: String
        public var version: String
        public var peer: Peer
        public var permissions: [String]
        /// The program usherd identified at the other end of this connection, when it accepted it; nil from a daemon
        /// older than program identification.
        public var program: Program?

        public init(
            protocol: Int,
            server: String,
            version: String,
            peer: Peer,
            permissions: [String],
            program: Program? = nil
        ) {
            self.protocol = `protocol`
            self.server = server
            self.version = version
            self.peer = peer
            self.permissions = permissions
            self.program = program
        }
    }

    /// The credentials of the connected process, as the kernel reports them.
    public struct Peer: Sendable, Hashable, Codable {
        public var uid: UInt32
        public var gid: UInt32
        public var pid: Int32

        public init(uid: UInt32, gid: UInt32, pid: Int32) {
            self.uid = uid
            self.gid = gid
            self.pid = pid
        }
    }

    /// The program at the other end of the connection, as usherd identified it once, when it accepted the
    /// connection (a process that `exec`s another program afterwards is still the one it was then).
    public struct Program: Sendable, Hashable, Codable {
        /// Whether the process was pinned (pidfd) and its executable read: only then can a rule with `executable`,
        /// `executable_sha256`, `unit` or `user_unit` match it.
        public var identified: Bool
        /// `/proc/PID/exe` at that time; nil when it could not be read.
        public var executable: String?
        /// The SHA-256 of the executable's file (lowercase hex): only present when some rule in force asks for one.
        public var executableSHA256: String?
        /// The systemd (system) unit the process belongs to (`sd_pid_get_unit`), e.g. `kiosk-app.service`, or
        /// `user@1000.service` for a process of a user's service manager; nil outside systemd's units.
        public var unit: String?
        /// The unit of the user's service manager the process belongs to (`sd_pid_get_user_unit`), e.g.
        /// `app-firefox.scope`; nil when it belongs to none.
        public var userUnit: String?

        public init(
            identified: Bool,
            executable: String?,
            executableSHA256: String? = nil,
            unit: String? = nil,
            userUnit: String? = nil
        ) {
            self.identified = identified
            self.executable = executable
            self.executableSHA256 = executableSHA256
            self.unit = unit
            self.userUnit = userUnit
        }

        private enum CodingKeys: String, CodingKey {
            case identified
            case executable
            case executableSHA256 = "executable_sha256"
            case unit
            case userUnit = "user_unit"
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(self.identified, forKey: .identified)
            // null rather than absent: a client can tell "not found" from "not asked" (the digest alone is absent
            // when no rule asked for it).
            try container.encode(self.executable, forKey: .executable)
            try container.encodeIfPresent(self.executableSHA256, forKey: .executableSHA256)
            try container.encode(self.unit, forKey: .unit)
            try container.encode(self.userUnit, forKey: .userUnit)
        }
    }
}
