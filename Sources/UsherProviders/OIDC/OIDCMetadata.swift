import UsherProtocol

/// What discovery (`ISSUER/.well-known/openid-configuration`, OpenID Connect Discovery 1.0) says about a provider:
/// its endpoints and what it supports.
struct OIDCMetadata: Sendable, Hashable {
    var issuer: String
    var authorizationEndpoint: String?
    var tokenEndpoint: String
    var userinfoEndpoint: String?
    var jwksURI: String
    /// RFC 7009; absent when the provider cannot revoke tokens.
    var revocationEndpoint: String?
    /// RFC 8628; absent when the provider has no device flow.
    var deviceAuthorizationEndpoint: String?
    /// Absent when the document does not say (then every grant is tried).
    var grantTypesSupported: [String]?
    var idTokenSigningAlgorithms: [String]
    var codeChallengeMethods: [String]?

    static let tokenExchangeGrant = "urn:ietf:params:oauth:grant-type:token-exchange"
    static let deviceCodeGrant = "urn:ietf:params:oauth:grant-type:device_code"

    /// The discovery URL of an issuer (OpenID Connect Discovery §4: the issuer, without a trailing slash, then
    /// `/.well-known/openid-configuration`).
    static func discoveryURL(issuer: String) -> String {
        var base = issuer
        while base.hasSuffix("/") { base.removeLast() }
        return base + "/.well-known/openid-configuration"
    }

    /// Parses and checks a discovery document: `issuer` must equal the configured issuer exactly, the required
    /// endpoints must be there, and every endpoint must be `https` (plain `http` only on a loopback host).
    static func parse(_ document: [String: JSONValue], expectedIssuer: String) throws(OIDCFailure) -> OIDCMetadata {
        func string(_ key: String) throws(OIDCFailure) -> String? {
            switch document[key] {
            case nil, .null?: return nil
            case .string(let value)?: return value
            default: throw .invalid("discovery: \(key) is not a string")
            }
        }
        func endpoint(_ key: String) throws(OIDCFailure) -> String? {
            guard let url = try string(key) else { return nil }
            if let problem = OIDCEndpoint.problem(with: url) { throw .invalid("discovery: \(key) \(problem)") }
            return url
        }
        func strings(_ key: String) throws(OIDCFailure) -> [String]? {
            switch document[key] {
            case nil, .null?: return nil
            case .array(let values)?:
                return values.compactMap(\.stringValue)
            default: throw .invalid("discovery: \(key) is not an array")
            }
        }
        guard let issuer = try string("issuer") else { throw .invalid("discovery: no issuer") }
        guard issuer == expectedIssuer else {
            throw .invalid(
                "discovery: the document's issuer \"\(OIDCHTTP.Response.printable(issuer, limit: 200))\" is not the "
                    + "configured issuer \"\(expectedIssuer)\""
            )
        }
        guard let tokenEndpoint = try endpoint("token_endpoint") else { throw .invalid("discovery: no token_endpoint") }
        guard let jwksURI = try endpoint("jwks_uri") else { throw .invalid("discovery: no jwks_uri") }
        return OIDCMetadata(
            issuer: issuer,
            authorizationEndpoint: try endpoint("authorization_endpoint"),
            tokenEndpoint: tokenEndpoint,
            userinfoEndpoint: try endpoint("userinfo_endpoint"),
            jwksURI: jwksURI,
            revocationEndpoint: try endpoint("revocation_endpoint"),
            deviceAuthorizationEndpoint: try endpoint("device_authorization_endpoint"),
            grantTypesSupported: try strings("grant_types_supported"),
            idTokenSigningAlgorithms: try strings("id_token_signing_alg_values_supported") ?? ["RS256"],
            codeChallengeMethods: try strings("code_challenge_methods_supported")
        )
    }

    /// Whether the provider says it supports `grant` (true when it does not say).
    func supports(grant: String) -> Bool {
        self.grantTypesSupported?.contains(grant) ?? true
    }
}
