import UsherCore
import UsherProtocol

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A successful token endpoint answer (RFC 6749 §5.1, RFC 8693 §2.2.1), parsed and checked.
struct OIDCTokenResponse: Sendable {
    var accessToken: String
    var expiresIn: Int64?
    var refreshToken: String?
    /// Keycloak and others say how long the refresh token lasts; 0 means "no expiry".
    var refreshExpiresIn: Int64?
    var idToken: String?
    /// `scope`: what the provider granted, when it says (absent: what was asked for, RFC 6749 section 5.1).
    var scope: String?
    /// Whether the provider bound the tokens to the proof's key (`token_type` `DPoP`).
    var isDPoPBound = false
    /// The key the tokens are bound to: the one whose proof the request carried, when the provider bound them.
    var dpopKey: DPoPKey?

    /// The access token lifetime assumed when the provider gives neither `expires_in` nor a JWT `exp`.
    static let defaultLifetimeSeconds: Int64 = 300

    /// - Parameter sentProof: whether the request carried a DPoP proof: only then may the tokens be `DPoP` ones (a
    ///   provider may still answer `Bearer`, when it does not bind tokens: RFC 9449 section 5).
    static func parse(_ object: [String: JSONValue], sentProof: Bool = false) throws(OIDCFailure) -> OIDCTokenResponse {
        guard case .string(let accessToken)? = object["access_token"], !accessToken.isEmpty else {
            throw .invalid("the token response has no access_token")
        }
        let tokenType = object["token_type"]?.stringValue?.lowercased()
        if let tokenType, tokenType != "bearer", !(sentProof && tokenType == "dpop") {
            let shown = OIDCHTTP.Response.printable(object["token_type"]?.stringValue ?? "", limit: 32)
            throw .invalid("the token type \"\(shown)\" is not Bearer" + (sentProof ? " or DPoP" : ""))
        }
        func optionalString(_ key: String) throws(OIDCFailure) -> String? {
            switch object[key] {
            case nil, .null?: return nil
            case .string(let value)?: return value.isEmpty ? nil : value
            default: throw .invalid("the token response's \(key) is not a string")
            }
        }
        return OIDCTokenResponse(
            accessToken: accessToken,
            expiresIn: try Self.seconds(object, "expires_in"),
            refreshToken: try optionalString("refresh_token"),
            refreshExpiresIn: try Self.seconds(object, "refresh_expires_in"),
            idToken: try optionalString("id_token"),
            scope: try optionalString("scope"),
            isDPoPBound: tokenType == "dpop"
        )
    }

    /// A number of seconds; some providers send it as a string.
    private static func seconds(_ object: [String: JSONValue], _ key: String) throws(OIDCFailure) -> Int64? {
        switch object[key] {
        case nil, .null?: return nil
        case .int(let value)?: return value
        case .double(let value)? where value.isFinite && abs(value) < 1e12: return Int64(value)
        case .string(let text)?:
            guard let value = Int64(text) else { throw .invalid("the token response's \(key) is not a number") }
            return value
        default: throw .invalid("the token response's \(key) is not a number")
        }
    }

    /// The tokens as the registry keeps them.
    ///
    /// The access token expires at `now + expires_in`, or at its own `exp` claim when it is a JWT that says so
    /// earlier; with neither, after `defaultLifetimeSeconds`. The refresh token's expiry is known only from
    /// `refresh_expires_in`.
    func tokenSet(now: Timestamp) -> TokenSet {
        var expiresAt: Timestamp? = self.expiresIn.map { now.adding(milliseconds: max(1, $0) * 1000) }
        if let exp = Self.jwtExpiry(self.accessToken) {
            let claimed = Timestamp(millisecondsSinceEpoch: exp * 1000)
            if claimed > now { expiresAt = min(expiresAt ?? claimed, claimed) }
        }
        return TokenSet(
            accessToken: self.accessToken,
            issuedAt: now,
            expiresAt: expiresAt ?? now.adding(milliseconds: Self.defaultLifetimeSeconds * 1000),
            refreshToken: self.refreshToken,
            refreshExpiresAt: self.refreshExpiresIn.flatMap { $0 > 0 ? now.adding(milliseconds: $0 * 1000) : nil },
            dpopKey: self.dpopKey
        )
    }

    /// The `exp` claim of a JWT access token, read without verifying it: it only ever shortens the lifetime the
    /// provider announced, so a forged value cannot extend anything.
    static func jwtExpiry(_ token: String) -> Int64? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Base64URL.decode(parts[1]),
            case .object(let claims)? = try? JSONDecoder().decode(JSONValue.self, from: Data(payload))
        else { return nil }
        switch claims["exp"] {
        case .int(let value)?: return value
        case .double(let value)? where value.isFinite && abs(value) < 1e12: return Int64(value)
        default: return nil
        }
    }
}
