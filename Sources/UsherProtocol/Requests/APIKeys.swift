/// `create_api_key`: creates a named API key for a logged-in user of a provider with API keys. The key is shown once.
public struct CreateAPIKeyRequest: UsherRequest {
    public static let method = Method.createAPIKey
    public var name: String
    /// Default: the active user.
    public var userID: String?

    public init(name: String, userID: String? = nil) {
        self.name = name
        self.userID = userID
    }

    public init(params: Params) throws(ResponseError) {
        self.name = try params.requiredString("name")
        self.userID = try params.optionalString("user_id")
    }

    public var params: Params {
        var params = Params(["name": .string(self.name)])
        params.set("user_id", self.userID)
        return params
    }

    public struct Result: Sendable, Hashable, Codable, CustomStringConvertible {
        public var userID: String
        public var name: String
        /// The key itself: returned only here, never again.
        public var key: String
        public var createdAt: Timestamp

        public init(userID: String, name: String, key: String, createdAt: Timestamp) {
            self.userID = userID
            self.name = name
            self.key = key
            self.createdAt = createdAt
        }

        private enum CodingKeys: String, CodingKey {
            case userID = "user_id"
            case name, key
            case createdAt = "created_at"
        }

        /// Never shows the key.
        public var description: String { "API key \(self.name) for \(self.userID)" }
    }
}

/// `list_api_keys`: the names of a user's API keys (never the keys).
public struct ListAPIKeysRequest: UsherRequest {
    public static let method = Method.listAPIKeys
    public var userID: String?

    public init(userID: String? = nil) { self.userID = userID }

    public init(params: Params) throws(ResponseError) {
        self.userID = try params.optionalString("user_id")
    }

    public var params: Params {
        var params = Params()
        params.set("user_id", self.userID)
        return params
    }

    public struct Result: Sendable, Hashable, Codable {
        public var userID: String
        public var apiKeys: [APIKeyInfo]

        public init(userID: String, apiKeys: [APIKeyInfo]) {
            self.userID = userID
            self.apiKeys = apiKeys
        }

        private enum CodingKeys: String, CodingKey {
            case userID = "user_id"
            case apiKeys = "api_keys"
        }
    }
}

public struct APIKeyInfo: Sendable, Hashable, Codable {
    public var name: String
    public var createdAt: Timestamp

    public init(name: String, createdAt: Timestamp) {
        self.name = name
        self.createdAt = createdAt
    }

    private enum CodingKeys: String, CodingKey {
        case name
        case createdAt = "created_at"
    }
}

/// `delete_api_key`: deletes a user's API key by name; logging in with it fails from then on.
public struct DeleteAPIKeyRequest: UsherRequest {
    public static let method = Method.deleteAPIKey
    public var name: String
    public var userID: String?

    public init(name: String, userID: String? = nil) {
        self.name = name
        self.userID = userID
    }

    public init(params: Params) throws(ResponseError) {
        self.name = try params.requiredString("name")
        self.userID = try params.optionalString("user_id")
    }

    public var params: Params {
        var params = Params(["name": .string(self.name)])
        params.set("user_id", self.userID)
        return params
    }

    public struct Result: Sendable, Hashable, Codable {
        public var userID: String
        public var name: String

        public init(userID: String, name: String) {
            self.userID = userID
            self.name = name
        }

        private enum CodingKeys: String, CodingKey {
            case userID = "user_id"
            case name
        }
    }
}
