/// `status`: the daemon's health and counters.
public struct StatusRequest: UsherRequest {
    public static let method = Method.status
    public init() {}
    public init(params: Params) throws(ResponseError) {}
    public var params: Params { Params() }

    public struct Result: Sendable, Hashable, Codable {
        public var version: String
        public var uptimeSeconds: Int64
        public var generation: Int64
        public var users: UserCounts
        public var activeUserID: String?
        public var connections: Int
        public var refresh: RefreshCounters

        public init(
            version: String,
            uptimeSeconds: Int64,
            generation: Int64,
            users: UserCounts,
            activeUserID: String?,
            connections: Int,
            refresh: RefreshCounters
        ) {
            self.version = version
            self.uptimeSeconds = uptimeSeconds
            self.generation = generation
            self.users = users
            self.activeUserID = activeUserID
            self.connections = connections
            self.refresh = refresh
        }

        private enum CodingKeys: String, CodingKey {
            case version
            case uptimeSeconds = "uptime_seconds"
            case generation, users
            case activeUserID = "active_user_id"
            case connections, refresh
        }

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

    public struct UserCounts: Sendable, Hashable, Codable {
        public var loggedIn: Int
        public var loggedOut: Int

        public init(loggedIn: Int, loggedOut: Int) {
            self.loggedIn = loggedIn
            self.loggedOut = loggedOut
        }

        private enum CodingKeys: String, CodingKey {
            case loggedIn = "logged_in"
            case loggedOut = "logged_out"
        }
    }

    /// Refresh scheduling: users with a scheduled refresh, the earliest deadline, and provider refresh calls since
    /// start (a single-flight refresh shared by many requests counts once).
    public struct RefreshCounters: Sendable, Hashable, Codable {
        public var scheduled: Int
        public var nextAt: Timestamp?
        public var succeeded: Int64
        public var failed: Int64

        public init(scheduled: Int, nextAt: Timestamp?, succeeded: Int64, failed: Int64) {
            self.scheduled = scheduled
            self.nextAt = nextAt
            self.succeeded = succeeded
            self.failed = failed
        }

        private enum CodingKeys: String, CodingKey {
            case scheduled
            case nextAt = "next_at"
            case succeeded, failed
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(self.scheduled, forKey: .scheduled)
            try container.encode(self.nextAt, forKey: .nextAt)
            try container.encode(self.succeeded, forKey: .succeeded)
            try container.encode(self.failed, forKey: .failed)
        }
    }
}
