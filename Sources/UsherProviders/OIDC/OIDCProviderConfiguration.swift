import UsherCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Settings of one `type = "oidc"` provider section.
package struct OIDCProviderConfiguration: Sendable, Hashable, CustomStringConvertible {
    /// How the client authenticates at the token, device authorization and revocation endpoints (RFC 6749 §2.3).
    package enum ClientAuthentication: String, Sendable, Hashable, CaseIterable {
        /// HTTP Basic with the form-encoded client id and secret.
        case clientSecretBasic = "client_secret_basic"
        /// `client_id` and `client_secret` in the form body.
        case clientSecretPost = "client_secret_post"
        /// A public client: `client_id` in the form body, no secret.
        case none
    }

    /// Discovery reads `ISSUER/.well-known/openid-configuration`; the document's `issuer` must equal this exactly.
    package var issuer: String
    package var clientID: String
    /// Read from `client_secret_file`; nil for public clients. Never logged or shown.
    package var clientSecret: String?
    package var scopes: [String]
    /// The `prompt` of authorization requests (OpenID Connect Core 3.1.2.1): nil sends the default, `consent` when
    /// `scopes` asks for `offline_access` (section 11: a provider that follows the text grants offline access only
    /// after consent, and otherwise ties the refresh token to the browser session) and none otherwise; "" sends none.
    package var prompt: String?

    /// The `prompt` parameter an authorization request carries, if any.
    package var authorizationPrompt: String? {
        if let prompt = self.prompt { return prompt.isEmpty ? nil : prompt }
        return self.scopes.contains("offline_access") ? "consent" : nil
    }
    /// The loopback redirect of the authorization code flow; port 0 means any free port.
    package var redirectURI: String
    package var clientAuthentication: ClientAuthentication
    /// Every request to the provider (connection to last byte).
    package var requestTimeoutMilliseconds: Int64
    /// `grant_types`: the grants the token endpoint accepts, overriding discovery's `grant_types_supported` (some
    /// providers list fewer than they accept). Full grant type identifiers; nil: trust discovery.
    package var grantTypes: Set<String>?
    /// `delete_account_url`: where `delete_user` deletes the account, with the session's access token as a bearer
    /// token (nil: the provider cannot delete accounts for usher, and `delete_user` answers `not_supported`).
    package var deleteAccountURL: String?
    /// `delete_account_method`: `DELETE` (default) or `POST`.
    package var deleteAccountMethod = "DELETE"
    /// `custom_claims`: the claims kept as the user's `custom_data` (from the ID token, userinfo, or the access token
    /// when it is a JWT). Never a secret's name (`UserClaims.customClaimNameProblem`).
    package var customClaims: [String] = []
    /// `dpop`: send DPoP proofs (RFC 9449) with a key usherd makes for each session on token requests, so that the
    /// provider binds the tokens to it, and with the session's userinfo requests.
    package var dpop = false
    /// `narrow_by_refresh`: where the provider has no token exchange, narrow tokens to fewer scopes with a refresh
    /// grant (RFC 6749 section 6). Off by default: providers that revoke or overwrite the previous access token when a
    /// refresh token is used (django-oauth-toolkit does) would end the session's own token with each narrowing.
    package var narrowByRefresh = false

    /// The grant names `grant_types` accepts, and the grant type identifier each stands for: the identifiers that
    /// discovery documents list, and `device_code` and `token_exchange` for the two URNs.
    package static let grantTypeNames: [String: String] = [
        "authorization_code": "authorization_code",
        "refresh_token": "refresh_token",
        "password": "password",
        "client_credentials": "client_credentials",
        "implicit": "implicit",
        "device_code": OIDCMetadata.deviceCodeGrant,
        OIDCMetadata.deviceCodeGrant: OIDCMetadata.deviceCodeGrant,
        "token_exchange": OIDCMetadata.tokenExchangeGrant,
        OIDCMetadata.tokenExchangeGrant: OIDCMetadata.tokenExchangeGrant,
    ]

    package static let defaultScopes = ["openid", "email", "profile"]
    package static let defaultRedirectURI = "http://127.0.0.1:0/callback"
    package static let defaultRequestTimeoutMilliseconds: Int64 = 10_000

    package init(
        issuer: String,
        clientID: String,
        clientSecret: String? = nil,
        scopes: [String] = Self.defaultScopes,
        redirectURI: String = Self.defaultRedirectURI,
        clientAuthentication: ClientAuthentication? = nil,
        requestTimeoutMilliseconds: Int64 = Self.defaultRequestTimeoutMilliseconds,
        grantTypes: Set<String>? = nil
    ) {
        self.issuer = issuer
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.scopes = scopes
        self.redirectURI = redirectURI
        self.clientAuthentication = clientAuthentication ?? (clientSecret == nil ? .none : .clientSecretBasic)
        self.requestTimeoutMilliseconds = requestTimeoutMilliseconds
        self.grantTypes = grantTypes
    }

    /// Never shows the client secret.
    package var description: String {
        "oidc(issuer: \(self.issuer), client_id: \(self.clientID), secret: \(self.clientSecret == nil ? "none" : "set"))"
    }

    // MARK: Validation

    /// Why `url` cannot be an endpoint of the provider (`delete_account_url`), or nil: absolute `https`, or `http` on a
    /// loopback host.
    package static func problem(withEndpoint url: String) -> String? {
        OIDCEndpoint.problem(with: url)
    }

    /// Why `issuer` cannot be an issuer, or nil: an absolute `https` URL without query or fragment; plain `http` only
    /// on a loopback host, where nothing leaves the machine.
    package static func problem(withIssuer issuer: String) -> String? {
        if let problem = OIDCEndpoint.problem(with: issuer) { return problem }
        guard let components = URLComponents(string: issuer), components.query == nil, components.fragment == nil
        else { return "must not have a query or a fragment" }
        return nil
    }

    /// Why `uri` cannot be the loopback redirect, or nil: `http://` on `127.0.0.1`, `[::1]` or `localhost`, with an
    /// explicit port (0 for any free port) and a path (RFC 8252 §7.3).
    package static func problem(withRedirectURI uri: String) -> String? {
        guard LoopbackRedirect(uri) == nil else { return nil }
        return "must be a loopback URL such as \"http://127.0.0.1:0/callback\": http, host 127.0.0.1, [::1] or "
            + "localhost, an explicit port, a path"
    }

    /// The configuration's problems with itself, or nil: a secret goes with `client_secret_basic`/`post`, and those
    /// need one.
    package func clientAuthenticationProblem() -> String? {
        switch (self.clientAuthentication, self.clientSecret) {
        case (.none, .some): "is \"none\", but client_secret_file gives a secret: use client_secret_basic or _post"
        case (.clientSecretBasic, nil), (.clientSecretPost, nil):
            "is \"\(self.clientAuthentication.rawValue)\", which needs client_secret_file"
        default: nil
        }
    }
}

/// Checks of provider URLs.
enum OIDCEndpoint {
    /// Why `url` cannot be a provider endpoint, or nil: absolute `https`, or `http` on a loopback host.
    static func problem(with url: String) -> String? {
        JWKSSource.problem(withURL: url)
    }

    static func isLoopback(host: String) -> Bool {
        let host = host.lowercased().trimming { $0 == "[" || $0 == "]" }
        if host == "localhost" || host == "::1" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }
}

/// A loopback redirect URI (RFC 8252 §7.3), parsed: `http://HOST:PORT/PATH`.
struct LoopbackRedirect: Hashable, Sendable {
    /// `127.0.0.1`, `::1` (written `[::1]` in the URI) or `localhost`.
    var host: String
    var port: Int
    var path: String

    init?(_ uri: String) {
        guard let components = URLComponents(string: uri), components.scheme?.lowercased() == "http",
            let host = components.host, OIDCEndpoint.isLoopback(host: host), let port = components.port,
            (0...65535).contains(port), components.user == nil, components.password == nil, components.query == nil,
            components.fragment == nil, components.path.hasPrefix("/")
        else { return nil }
        self.host = host.lowercased().trimming { $0 == "[" || $0 == "]" }
        self.port = port
        self.path = components.path
    }

    init(host: String, port: Int, path: String) {
        self.host = host
        self.port = port
        self.path = path
    }

    var uri: String {
        let host = self.host.contains(":") ? "[\(self.host)]" : self.host
        return "http://\(host):\(self.port)\(self.path)"
    }

    /// Whether a client's actual redirect `other` fits this configured one: same host and path, and same port unless
    /// the configured port is 0 (any port, RFC 8252 §7.3).
    func admits(_ other: LoopbackRedirect) -> Bool {
        other.host == self.host && other.path == self.path && other.port != 0
            && (self.port == 0 || other.port == self.port)
    }
}
