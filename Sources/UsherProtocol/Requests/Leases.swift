/// What a lease holds off: `block` refuses changes of the seat's active user, `delay` makes them wait.
public enum LeaseMode: String, Sendable, Hashable, Codable, CaseIterable {
    case block
    case delay
}

/// `inhibit`: takes a lease on a seat, "don't switch the active user under me", as `systemd-inhibit` holds off a
/// shutdown. The lease lives until `release` or until the connection that took it closes.
public struct InhibitRequest: UsherRequest {
    public static let method = Method.inhibit

    /// Default: the caller's seat (logind), else the default seat.
    public var seat: String?
    public var mode: LeaseMode
    /// Who holds it (a program's name), for people reading `list_leases`.
    public var who: String
    /// Why, for people reading `list_leases`.
    public var why: String

    public init(seat: String? = nil, mode: LeaseMode, who: String, why: String) {
        self.seat = seat
        self.mode = mode
        self.who = who
        self.why = why
    }

    /// The longest `who` or `why` accepted.
    public static let maximumTextLength = 256

    public init(params: Params) throws(ResponseError) {
        self.seat = try params.optionalString("seat")
        let mode = try params.requiredString("mode")
        guard let parsed = LeaseMode(rawValue: mode) else {
            throw ResponseError(.invalidParams, "params.mode must be \"block\" or \"delay\"")
        }
        self.mode = parsed
        self.who = try params.requiredString("who")
        self.why = try params.requiredString("why")
        for (key, value) in [("who", self.who), ("why", self.why)] {
            guard !value.isEmpty, value.utf8.count <= Self.maximumTextLength else {
                throw ResponseError(
                    .invalidParams,
                    "params.\(key) must be between 1 and \(Self.maximumTextLength) bytes"
                )
            }
        }
    }

    public var params: Params {
        var params = Params([
            "mode": .string(self.mode.rawValue), "who": .string(self.who), "why": .string(self.why),
        ])
        params.set("seat", self.seat)
        return params
    }

    public struct Result: Sendable, Hashable, Codable {
        /// The lease's id (`l_…`), for `release`.
        public var lease: String
        public var seat: String

        public init(lease: String, seat: String) {
            self.lease = lease
            self.seat = seat
        }
    }
}

/// `release`: ends a lease this connection holds.
public struct ReleaseRequest: UsherRequest {
    public static let method = Method.release

    public var lease: String

    public init(lease: String) { self.lease = lease }

    public init(params: Params) throws(ResponseError) {
        self.lease = try params.requiredString("lease")
    }

    public var params: Params { Params(["lease": .string(self.lease)]) }

    public struct Result: Sendable, Hashable, Codable {
        public var lease: String
        public var released: Bool

        public init(lease: String, released: Bool) {
            self.lease = lease
            self.released = released
        }
    }
}

/// `list_leases`: every lease held now, on every seat.
public struct ListLeasesRequest: UsherRequest {
    public static let method = Method.listLeases

    public init() {}
    public init(params: Params) throws(ResponseError) {}
    public var params: Params { Params() }

    public struct Result: Sendable, Hashable, Codable {
        public var leases: [LeaseInfo]

        public init(leases: [LeaseInfo]) { self.leases = leases }
    }
}

/// A lease as clients see it (in `list_leases`, and in the `data.holders` of an `inhibited` error).
public struct LeaseInfo: Sendable, Hashable, Codable {
    public var lease: String
    public var seat: String
    public var mode: LeaseMode
    public var who: String
    public var why: String
    public var pid: Int32
    public var uid: UInt32
    /// The holder's executable, when it could be read.
    public var executable: String?
    public var since: Timestamp

    public init(
        lease: String,
        seat: String,
        mode: LeaseMode,
        who: String,
        why: String,
        pid: Int32,
        uid: UInt32,
        executable: String?,
        since: Timestamp
    ) {
        self.lease = lease
        self.seat = seat
        self.mode = mode
        self.who = who
        self.why = why
        self.pid = pid
        self.uid = uid
        self.executable = executable
        self.since = since
    }

    private enum CodingKeys: String, CodingKey {
        case lease, seat, mode, who, why, pid, uid, executable, since
    }

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
            "who": .string(self.who), "why": .string(self.why), "pid": .int(Int64(self.pid)),
            "uid": .int(Int64(self.uid)), "since": .string(self.since.description),
        ]
        object["executable"] = self.executable.map(JSONValue.string) ?? .null
        return .object(object)
    }
}
