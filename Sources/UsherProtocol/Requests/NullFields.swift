// The results and types whose absent optionals are written as `null` rather than left out, as they always were on the
// wire (the golden tests pin them): a client can tell "none" from "not said". Their types are generated from
// varlink/io.usher.Session.varlink, where `?` does not say which; the encoders here do, one per type. Every other
// generated type leaves absent optionals out.

extension CurrentUserRequest.Result {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.generation = try container.decode(Int64.self, forKey: .generation)
        self.seat = try container.decodeIfPresent(String.self, forKey: .seat)
        self.user = try container.decodeIfPresent(UserInfo.self, forKey: .user)
        // A daemon from before seat locks sends none: its seats are never locked.
        self.locked = try container.decodeIfPresent(Bool.self, forKey: .locked) ?? false
    }

    /// `user` is null when nobody is logged in on the seat.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(self.generation, forKey: .generation)
        try container.encodeIfPresent(self.seat, forKey: .seat)
        try container.encode(self.user, forKey: .user)
        try container.encode(self.locked, forKey: .locked)
    }
}

extension ProgramInfo {
    /// null rather than absent: a client can tell "not found" from "not asked" (the digest alone is absent when no
    /// rule asked for it).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(self.identified, forKey: .identified)
        try container.encode(self.executable, forKey: .executable)
        try container.encodeIfPresent(self.executableSHA256, forKey: .executableSHA256)
        try container.encode(self.unit, forKey: .unit)
        try container.encode(self.userUnit, forKey: .userUnit)
    }
}

extension StatusRequest.Result {
    /// `active_user_id` is null when nobody is active.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(self.version, forKey: .version)
        try container.encode(self.uptimeSeconds, forKey: .uptimeSeconds)
        try container.encode(self.generation, forKey: .generation)
        try container.encode(self.users, forKey: .users)
        try container.encode(self.activeUserID, forKey: .activeUserID)
        try container.encode(self.connections, forKey: .connections)
        try container.encode(self.refresh, forKey: .refresh)
    }
}

extension RefreshCounters {
    /// `next_at` is null when no refresh is scheduled.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(self.scheduled, forKey: .scheduled)
        try container.encode(self.nextAt, forKey: .nextAt)
        try container.encode(self.succeeded, forKey: .succeeded)
        try container.encode(self.failed, forKey: .failed)
    }
}

extension LeaseInfo {
    /// `executable` is null when it could not be read.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(self.lease, forKey: .lease)
        try container.encode(self.seat, forKey: .seat)
        try container.encode(self.mode, forKey: .mode)
        try container.encode(self.who, forKey: .who)
        try container.encode(self.why, forKey: .why)
        try container.encode(self.pid, forKey: .pid)
        try container.encode(self.uid, forKey: .uid)
        try container.encode(self.executable, forKey: .executable)
        try container.encode(self.since, forKey: .since)
    }

    /// This lease as a JSON value (an `inhibited` error's `data.holders`).
    public var jsonValue: JSONValue {
        var object: [String: JSONValue] = [
            "lease": .string(self.lease), "seat": .string(self.seat), "mode": .string(self.mode.rawValue),
            "who": .string(self.who), "why": .string(self.why), "pid": .int(self.pid), "uid": .int(self.uid),
            "since": .string(self.since.description),
        ]
        object["executable"] = self.executable.map(JSONValue.string) ?? .null
        return .object(object)
    }
}

extension SeatInfo {
    /// Every key is always present: `user_id` is null when nobody is active.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(self.name, forKey: .name)
        try container.encode(self.source, forKey: .source)
        try container.encode(self.present, forKey: .present)
        try container.encode(self.userID, forKey: .userID)
    }
}

extension LockSeatRequest.Result {
    /// `by` is null when the seat is unlocked.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(self.seat, forKey: .seat)
        try container.encode(self.locked, forKey: .locked)
        try container.encode(self.by, forKey: .by)
    }
}

extension LoginBeginRequest.Result {
    /// Every key is always present; the keys of the other flow are null.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(self.type, forKey: .type)
        try container.encode(self.status, forKey: .status)
        try container.encode(self.provider, forKey: .provider)
        try container.encode(self.loginID, forKey: .loginID)
        try container.encode(self.authorizeURL, forKey: .authorizeURL)
        try container.encode(self.state, forKey: .state)
        try container.encode(self.codeVerifier, forKey: .codeVerifier)
        try container.encode(self.redirectURI, forKey: .redirectURI)
        try container.encode(self.verificationURI, forKey: .verificationURI)
        try container.encode(self.verificationURIComplete, forKey: .verificationURIComplete)
        try container.encode(self.userCode, forKey: .userCode)
        try container.encode(self.expiresAt, forKey: .expiresAt)
    }
}

extension LoginBeginRequest.Result: CustomStringConvertible {
    /// Never shows the PKCE verifier or the state.
    public var description: String {
        "login_begin(\(self.type.rawValue) at \(self.provider), expires \(self.expiresAt))"
    }
}

/// A seat's lock, as `lock_seat` and `unlock` answer it.
public typealias SeatLockResult = LockSeatRequest.Result

extension CurrentUserRequest.Result {
    /// A seat that is not locked.
    public init(generation: Int64, seat: String? = nil, user: UserInfo?) {
        self.init(generation: generation, seat: seat, user: user, locked: false)
    }
}
