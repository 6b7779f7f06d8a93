/// `jwks`: the public keys that verify access tokens issued by the daemon's local providers (RFC 7517 JWK set).
public struct JWKSRequest: UsherRequest {
    public static let method = Method.jwks
    public init() {}
    public init(params: Params) throws(ResponseError) {}
    public var params: Params { Params() }

    public struct Result: Sendable, Hashable, Codable {
        public var keys: [JWK]
        public init(keys: [JWK]) { self.keys = keys }
    }
}

/// A public JSON Web Key.
public struct JWK: Sendable, Hashable, Codable {
    public var kty: String
    public var kid: String?
    public var use: String?
    public var alg: String?
    public var crv: String?
    public var x: String?
    public var y: String?
    public var n: String?
    public var e: String?

    public init(
        kty: String,
        kid: String? = nil,
        use: String? = nil,
        alg: String? = nil,
        crv: String? = nil,
        x: String? = nil,
        y: String? = nil,
        n: String? = nil,
        e: String? = nil
    ) {
        self.kty = kty
        self.kid = kid
        self.use = use
        self.alg = alg
        self.crv = crv
        self.x = x
        self.y = y
        self.n = n
        self.e = e
    }
}
