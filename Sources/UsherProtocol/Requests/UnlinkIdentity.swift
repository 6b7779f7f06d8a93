/// `unlink_identity`: removes one identity from a user. The last one cannot be removed; removing the session's own
/// identity logs the session out.
public struct UnlinkIdentityRequest: UsherRequest {
    public static let method = Method.unlinkIdentity
    public var userID: String
    public var provider: String
    public var subject: String
    /// Whether a block lease on the user's seat is broken, when the session ends (needs `manage`; audited as forced).
    public var force = false

    public init(userID: String, provider: String, subject: String, force: Bool = false) {
        self.userID = userID
        self.provider = provider
        self.subject = subject
        self.force = force
    }

    public init(params: Params) throws(ResponseError) {
        self.userID = try params.requiredString("user_id")
        self.provider = try params.requiredString("provider")
        self.subject = try params.requiredString("subject")
        self.force = try params.optionalBool("force") ?? false
    }

    public var params: Params {
        var params = Params([
            "user_id": .string(self.userID), "provider": .string(self.provider), "subject": .string(self.subject),
        ])
        params.set("force", flag: self.force)
        return params
    }

    /// `{"generation", "user", "removed", "revoked"}`: the user as it is now (null when it was removed: only anonymous
    /// identities were left), and whether its ended session was revoked at the provider.
    public struct Result: Sendable, Hashable, Codable {
        public var generation: Int64
        public var user: UserInfo?
        public var removed: Bool
        public var revoked: Bool

        public init(generation: Int64, user: UserInfo?, removed: Bool, revoked: Bool) {
            self.generation = generation
            self.user = user
            self.removed = removed
            self.revoked = revoked
        }
    }
}
