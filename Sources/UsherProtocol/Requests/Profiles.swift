/// `refresh_profile`: refreshes a user's tokens and reads its claims at the provider again (the SDK's
/// `refreshCustomData()`); answers with the user.
public struct RefreshProfileRequest: UsherRequest {
    public static let method = Method.refreshProfile
    /// Default: the active user.
    public var userID: String?
    /// The seat whose active user is meant when `user_id` is absent. Default: the caller's seat, else the default.
    public var seat: String?

    public init(userID: String? = nil, seat: String? = nil) {
        self.userID = userID
        self.seat = seat
    }

    public init(params: Params) throws(ResponseError) {
        self.userID = try params.optionalString("user_id")
        self.seat = try params.optionalString("seat")
    }

    public var params: Params {
        var params = Params()
        params.set("user_id", self.userID)
        params.set("seat", self.seat)
        return params
    }

    public typealias Result = UserResult
}

/// `update_profile`: sets the name, picture or locale of a local email/password account's profile; answers with the
/// user. A member that is absent stays as it is; `null` or `""` removes it.
public struct UpdateProfileRequest: UsherRequest {
    public static let method = Method.updateProfile
    /// The claims `update_profile` sets.
    public static let claimNames = ["name", "picture", "locale"]
    /// Default: the active user.
    public var userID: String?
    public var seat: String?
    /// The claims to change, by name (`name`, `picture`, `locale`): a string sets it, `.null` removes it.
    public var changes: [String: JSONValue]

    public init(userID: String? = nil, seat: String? = nil, changes: [String: JSONValue]) {
        self.userID = userID
        self.seat = seat
        self.changes = changes
    }

    public init(params: Params) throws(ResponseError) {
        self.userID = try params.optionalString("user_id")
        self.seat = try params.optionalString("seat")
        var changes: [String: JSONValue] = [:]
        for name in Self.claimNames {
            switch params[name] {
            case .none: continue
            case .some(.null): changes[name] = .null
            case .some(.string(let value)): changes[name] = .string(value)
            case .some(let value):
                throw ResponseError(.invalidParams, "params.\(name) must be a string or null, not \(value.typeName)")
            }
        }
        guard !changes.isEmpty else {
            throw ResponseError(.invalidParams, "update_profile needs at least one of name, picture, locale")
        }
        self.changes = changes
    }

    public var params: Params {
        var params = Params(self.changes)
        params.set("user_id", self.userID)
        params.set("seat", self.seat)
        return params
    }

    public typealias Result = UserResult
}
