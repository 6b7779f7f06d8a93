/// The narrowing a program asks `access_token` or `dpop_proof` for: a token for one audience, with no more than some
/// scopes (see docs/least-privilege.md). Both optional; neither: the session's own token (or, for a program whose
/// rule narrows, what its rule gives).
public struct TokenAudience: Sendable, Hashable {
    /// The longest `audience` accepted, in bytes.
    public static let maximumAudienceLength = 2048
    /// The most `scopes` accepted, and the longest scope, in bytes.
    public static let maximumScopeCount = 64
    public static let maximumScopeLength = 256

    /// `aud` of the token: a resource server's URI or name.
    public var audience: String?
    /// `scope` of the token: sorted, without repeats.
    public var scopes: [String]?

    public init(audience: String? = nil, scopes: [String]? = nil) {
        self.audience = audience
        self.scopes = scopes.map { Array(Set($0)).sorted() }
    }

    /// Whether it asks for anything narrower than the session's token.
    public var narrows: Bool { self.audience != nil || self.scopes != nil }

    /// `audience` and `scopes` as a request sent them, checked (`access_token`'s and `dpop_proof`'s `validate`).
    public static func checked(audience: String?, scopes: [String]?) throws(ResponseError) -> TokenAudience {
        if let audience {
            guard (1...Self.maximumAudienceLength).contains(audience.utf8.count),
                audience.utf8.allSatisfy({ (0x21...0x7E).contains($0) })
            else {
                throw ParamsDecoder.invalid(
                    "audience",
                    "params.audience must be 1 to \(Self.maximumAudienceLength) printable ASCII characters without "
                        + "spaces (a URI or a name)"
                )
            }
        }
        if let scopes {
            guard (1...Self.maximumScopeCount).contains(scopes.count),
                scopes.allSatisfy(Self.isScopeToken)
            else {
                throw ParamsDecoder.invalid(
                    "scopes",
                    "params.scopes must be 1 to \(Self.maximumScopeCount) scopes, each 1 to "
                        + "\(Self.maximumScopeLength) printable ASCII characters without spaces, quotes or "
                        + "backslashes (RFC 6749 section 3.3)"
                )
            }
        }
        return TokenAudience(audience: audience, scopes: scopes)
    }

    /// RFC 6749 section 3.3: `scope-token = 1*( %x21 / %x23-5B / %x5D-7E )`.
    public static func isScopeToken(_ scope: String) -> Bool {
        (1...Self.maximumScopeLength).contains(scope.utf8.count)
            && scope.utf8.allSatisfy { $0 == 0x21 || (0x23...0x5B).contains($0) || (0x5D...0x7E).contains($0) }
    }
}
