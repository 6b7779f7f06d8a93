extension UpdateProfileRequest {
    /// The claims `update_profile` sets.
    public static let claimNames = ["name", "picture", "locale"]

    /// The claims to change, by name: a string sets it, `.null` removes it.
    public init(userID: String? = nil, seat: String? = nil, changes: [String: JSONValue]) {
        func claim(_ name: String) -> String? {
            switch changes[name] {
            case .string(let value)?: value
            case .null?: ""
            default: nil
            }
        }
        self.init(userID: userID, seat: seat, name: claim("name"), picture: claim("picture"), locale: claim("locale"))
    }

    /// The claims to change, by name (`name`, `picture`, `locale`): a string sets it, `.null` removes it (sent as
    /// `null` or `""`).
    public var changes: [String: JSONValue] {
        var changes: [String: JSONValue] = [:]
        for (name, value) in [("name", self.name), ("picture", self.picture), ("locale", self.locale)] {
            guard let value else { continue }
            changes[name] = value.isEmpty ? .null : .string(value)
        }
        return changes
    }

    /// `null` removes a claim as `""` does (the generated decoder reads `null` as absent, so it is read here), and at
    /// least one claim must be named.
    public mutating func validate(_ params: Params) throws(ResponseError) {
        if params["name"] == .null { self.name = "" }
        if params["picture"] == .null { self.picture = "" }
        if params["locale"] == .null { self.locale = "" }
        guard self.name != nil || self.picture != nil || self.locale != nil else {
            throw ParamsDecoder.invalid("name", "update_profile needs at least one of name, picture, locale")
        }
    }
}
