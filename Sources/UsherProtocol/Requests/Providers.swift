/// `providers`: the configured identity providers and the credential types each accepts.
public struct ProvidersRequest: UsherRequest {
    public static let method = Method.providers
    public init() {}
    public init(params: Params) throws(ResponseError) {}
    public var params: Params { Params() }

    public struct Result: Sendable, Hashable, Codable {
        public var providers: [ProviderInfo]
        public init(providers: [ProviderInfo]) { self.providers = providers }
    }
}

public struct ProviderInfo: Sendable, Hashable, Codable {
    public var name: String
    public var type: String
    public var credentials: [String]
    /// Whether requests that name no provider use this one.
    public var `default`: Bool

    public init(name: String, type: String, credentials: [String], default: Bool) {
        self.name = name
        self.type = type
        self.credentials = credentials
        self.default = `default`
    }
}
