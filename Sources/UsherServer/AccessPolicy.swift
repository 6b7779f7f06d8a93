import UsherCore
import UsherProtocol

/// What a peer may do. Every method needs one permission (its handler in `Methods/` names it), except `hello`, which
/// is always allowed.
package enum Permission: String, Sendable, Hashable, CaseIterable, Comparable {
    /// `providers`, `current_user`, `list_users`, `subscribe`, `status`, `jwks`.
    case read
    /// `access_token`, `refresh`, `refresh_profile`.
    case token
    /// Everything that changes state.
    case manage

    package static func < (lhs: Permission, rhs: Permission) -> Bool {
        Self.allCases.firstIndex(of: lhs)! < Self.allCases.firstIndex(of: rhs)!
    }
}

/// What a request is about, for rules limited to seats (`[[access.rule]] seats = [...]`): the table in
/// `docs/seats-and-leases.md`; each method's handler (`Methods/`) names its own. Unscoped rules grant their
/// permissions whatever a request is about.
package enum SeatReach: Sendable, Hashable {
    /// Neither a seat nor a user: a seat-scoped rule grants it (`providers`, `jwks`, `register`, `login_begin`,
    /// `change_password`, which proves the account's password as a login does, the confirmation and self-service
    /// reset methods, which prove a mailbox, and `release`, which only ever ends the connection's own leases).
    case nothing
    /// The seats the request names or acts on, which only the state can tell: the registry (or, for reads answered
    /// from the published state, the view) checks them against the scope, with `SeatScope.require`.
    case seats
    /// The whole device, or users wherever they are: no seat-scoped rule grants it.
    case device
}

/// The credentials the kernel reports for the process at the other end of a connection (`SO_PEERCRED`,
/// `SO_PEERGROUPS`), and the program usherd identified there (`ProgramIdentifier`).
package struct PeerCredentials: Sendable, Hashable {
    package var uid: UInt32
    package var gid: UInt32
    package var pid: Int32
    /// Supplementary groups.
    package var groups: [UInt32]
    /// Its executable and units, found once when the connection was accepted.
    package var program: PeerProgram

    package init(uid: UInt32, gid: UInt32, pid: Int32, groups: [UInt32] = [], program: PeerProgram = .unidentified) {
        self.uid = uid
        self.gid = gid
        self.pid = pid
        self.groups = groups
        self.program = program
    }
}

/// The program conditions of a rule (`executable`, `executable_sha256`, `unit`, `user_unit`): every one given must
/// hold, and none holds for a peer whose program could not be identified, that has `exec`ed since it connected, or
/// (unless the rule says `namespace = "any"`) that is in another mount or user namespace than the host's.
package struct ProgramCondition: Sendable, Hashable {
    /// Where the peer's process may be: in the host's namespaces only, or in any (containers meant to match).
    package enum Namespaces: String, Sendable, Hashable {
        case host
        case any
    }

    /// The executable's path, as `/proc/PID/exe` shows it (links resolved); in the host's mount namespace, the path
    /// must name that very file as usherd sees it.
    package var executable: String?
    /// The executable file's SHA-256, lowercase hex.
    package var executableSHA256: String?
    /// The systemd unit (`sd_pid_get_unit`).
    package var unit: String?
    /// The unit of the user's service manager (`sd_pid_get_user_unit`).
    package var userUnit: String?
    /// `namespace`.
    package var namespaces: Namespaces

    package init(
        executable: String? = nil,
        executableSHA256: String? = nil,
        unit: String? = nil,
        userUnit: String? = nil,
        namespaces: Namespaces = .host
    ) {
        self.executable = executable
        self.executableSHA256 = executableSHA256
        self.unit = unit
        self.userUnit = userUnit
        self.namespaces = namespaces
    }

    func matches(_ program: PeerProgram) -> Bool {
        let identity = program.identity
        guard identity.identified else { return false }
        let host = identity.hostMountNamespace && identity.hostUserNamespace
        guard host || self.namespaces == .any else { return false }
        if let executable = self.executable {
            guard identity.executable == executable else { return false }
            // In the host's mount namespace the path must be the file itself, as usherd sees it: a file bind-mounted
            // over it elsewhere is another inode. In another mount namespace (`namespace = "any"`) the path is the
            // one the process sees there, and proves nothing more.
            guard identity.executableIsPath || !identity.hostMountNamespace else { return false }
        }
        if let unit = self.unit, identity.unit != unit { return false }
        if let userUnit = self.userUnit, identity.userUnit != userUnit { return false }
        // Then the only condition that takes a lock (the digest is computed once, off the event loop).
        if let digest = self.executableSHA256, program.executableSHA256 != digest { return false }
        // Last, as it reads /proc: the process still runs what it ran when it connected.
        return program.isUnchanged
    }
}

/// One `[[access.rule]]`: who it is about and what it allows.
package struct AccessRule: Sendable, Hashable {
    package enum Principal: Sendable, Hashable, CustomStringConvertible {
        case uid(UInt32)
        /// A user by name, resolved to its uid when the configuration is read.
        case user(name: String, uid: UInt32)
        /// A group by name, resolved to its gid; it matches the peer's primary and supplementary groups.
        case group(name: String, gid: UInt32)

        package var description: String {
            switch self {
            case .uid(let uid): "uid \(uid)"
            case .user(let name, _): "user \(name)"
            case .group(let name, _): "group \(name)"
            }
        }
    }

    package var principal: Principal
    package var allow: Set<Permission>
    /// `seats = [...]`: the rule grants its permissions only for requests about these seats and no other (see
    /// `SeatReach`); nil: every seat.
    package var seats: Set<String>?
    /// Which program the peer must be, besides who (`ProgramCondition`); nil: any program.
    package var program: ProgramCondition?
    /// `audience`, `scopes`: the tokens `token` gives are narrowed to these (`TokenGrant`); nil: the session's own.
    package var narrowing: TokenAudience?

    package init(
        _ principal: Principal,
        allow: Set<Permission>,
        seats: Set<String>? = nil,
        program: ProgramCondition? = nil,
        narrowing: TokenAudience? = nil
    ) {
        self.principal = principal
        self.allow = allow
        self.seats = seats
        self.program = program
        self.narrowing = narrowing
    }

    func matches(_ peer: PeerCredentials) -> Bool {
        let principal =
            switch self.principal {
            case .uid(let uid), .user(_, let uid): peer.uid == uid
            case .group(_, let gid): peer.gid == gid || peer.groups.contains(gid)
            }
        guard principal else { return false }
        guard let program = self.program else { return true }
        return program.matches(peer.program)
    }
}

/// Decides what a peer may do from its credentials.
///
/// The daemon's own uid and root may always do everything. Anyone else gets the union of what the rules that match
/// it allow; with no rules, nothing but `hello`. A value: the server keeps the one in force in `ServerSettings` and
/// asks it again for every request, so a reload applies to connections that are already open.
package struct AccessPolicy: Sendable, Hashable {
    package var daemonUID: UInt32
    package var rules: [AccessRule]

    package init(daemonUID: UInt32, rules: [AccessRule] = []) {
        self.daemonUID = daemonUID
        self.rules = rules
    }

    /// Root and the daemon's own uid: every permission, whatever the rules say, and connection slots of their own.
    package func isPrivileged(_ peer: PeerCredentials) -> Bool {
        peer.uid == 0 || peer.uid == self.daemonUID
    }

    /// Every permission, built once: the privileged peers' answer on every request.
    private static let everything = Set(Permission.allCases)

    /// The permissions a peer has on every seat (what rules limited to seats grant is not among them: see
    /// `scope(of:for:)`).
    package func permissions(for peer: PeerCredentials) -> Set<Permission> {
        if self.isPrivileged(peer) { return Self.everything }
        var granted = Set<Permission>()
        for rule in self.rules where rule.seats == nil && rule.matches(peer) { granted.formUnion(rule.allow) }
        return granted
    }

    /// Where a peer holds a permission: on every seat when a rule without `seats` grants it, else on the seats of the
    /// rules that grant it; nil when no rule does.
    package func scope(of permission: Permission, for peer: PeerCredentials) -> SeatScope? {
        if self.isPrivileged(peer) { return .everywhere }
        var seats: Set<String>?
        for rule in self.rules where rule.allow.contains(permission) && rule.matches(peer) {
            guard let ruleSeats = rule.seats else { return .everywhere }
            seats = (seats ?? []).union(ruleSeats)
        }
        return seats.map(SeatScope.seats)
    }

    /// The permissions a peer has for a request about `seat` (for `hello`): on every seat, or on that one.
    package func permissions(for peer: PeerCredentials, seat: String) -> Set<Permission> {
        Set(Permission.allCases.filter { self.scope(of: $0, for: peer)?.covers([seat]) ?? false })
    }

    /// Whether some rule is scoped to seats: only then does a request's seat matter to its permissions.
    package var hasSeatRules: Bool { self.rules.contains { $0.seats != nil } }

    /// Whether some rule asks for the executable's digest: only then are peers' executables hashed.
    package var needsExecutableDigests: Bool { self.rules.contains { $0.program?.executableSHA256 != nil } }

    /// Whether some rule has program conditions.
    package var hasProgramRules: Bool { self.rules.contains { $0.program != nil } }
}
