import Logging
import UsherCore
import UsherProtocol

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension CredentialType {
    /// `{"type": "access_token", "issuer", "token"}`: an opaque OAuth 2.0 access token from a named outside issuer
    /// (`[providers.NAME.access_token.ISSUER]`), checked by introspection (RFC 7662) or by the issuer's userinfo API.
    package static let accessToken = "access_token"
}

/// `[providers.NAME.access_token.ISSUER]`: an outside OAuth 2.0 provider whose (opaque) access tokens log users in.
package struct AccessTokenIssuerConfiguration: Sendable, Hashable, CustomStringConvertible {
    /// How a token is checked.
    package enum Check: Sendable, Hashable {
        /// `introspection_url`: POST the token there as the configured client (RFC 7662); `active` must be `true`.
        case introspection(url: String)
        /// `userinfo_url`: GET it with the token as a bearer token; any 200 answer with a subject proves the token.
        case userinfo(url: String)
    }

    package var check: Check
    /// `client_id` and `client_secret_file`: the client usher authenticates as at the introspection endpoint (HTTP
    /// Basic). Never shown.
    package var clientID: String?
    package var clientSecret: String?
    /// `audience`: when the answer carries `aud`, it must name one of these (empty: not checked).
    package var audiences: [String] = []
    /// `accepted_client_ids`: when the answer carries `client_id` (or `azp`), it must be one of these (empty: not
    /// checked).
    package var acceptedClientIDs: [String] = []
    /// `subject_field`: the answer's member that identifies the user (introspection: `sub`, else `username`).
    package var subjectField: String?
    /// `email_field`: the answer's member holding the user's email.
    package var emailField = "email"
    /// `request_timeout`.
    package var requestTimeoutMilliseconds: Int64 = 10_000
    /// `custom_claims`: the answer's members kept as the user's `custom_data`.
    package var customClaims: [String] = []

    package init(check: Check) {
        self.check = check
    }

    /// Never shows the client secret.
    package var description: String {
        switch self.check {
        case .introspection(let url):
            "access_token(introspection: \(url), client_id: \(self.clientID ?? "none"), "
                + "secret: \(self.clientSecret == nil ? "none" : "set"))"
        case .userinfo(let url): "access_token(userinfo: \(url))"
        }
    }

    /// Why `url` cannot be an endpoint of this section: it must be `https`, or `http` on a loopback host.
    package static func problem(withURL url: String) -> String? {
        JWKSSource.problem(withURL: url)
    }
}

extension LocalProvider {
    /// `{"type": "access_token", "issuer", "token"}`. The subject is `access_token:<issuer name>:<subject>`: the
    /// section's name, so renaming the section makes its users new ones. The token is sent only to the configured
    /// endpoint; it is neither stored nor logged, and no error message holds it.
    func authenticateAccessToken(_ credentials: [String: JSONValue]) async throws -> Authentication {
        guard !self.outside.accessTokenIssuers.isEmpty else {
            throw ProviderError.unsupportedCredentials(
                "provider \(self.name) does not accept access_token credentials "
                    + "(no [providers.\(self.name).access_token.ISSUER] section)"
            )
        }
        guard let name = credentials["issuer"]?.stringValue else {
            throw ProviderError.invalidParams(
                parameter: "credentials",
                "access_token credentials need a string issuer (a configured issuer's name)"
            )
        }
        guard let issuer = self.outside.accessTokenIssuers[name] else {
            throw ProviderError.unsupportedCredentials(
                "provider \(self.name) has no access-token issuer named \(JWTError.quoted(name)) (configured: "
                    + self.outside.accessTokenIssuers.keys.sorted().joined(separator: ", ") + ")"
            )
        }
        guard let token = credentials["token"]?.stringValue, !token.isEmpty, token.utf8.count <= 16 * 1024 else {
            throw ProviderError.invalidParams(
                parameter: "credentials",
                "access_token credentials need a token: a string of 1 to 16384 bytes"
            )
        }
        let answer = try await self.checkAccessToken(token, with: issuer)
        let configuration = issuer.configuration
        let subject = try Self.accessTokenSubject(answer, configuration)
        var email: String?
        switch answer["email_verified"] {
        case nil, .bool(true)?: email = answer[configuration.emailField]?.stringValue
        default: email = nil
        }
        if email?.isEmpty == true { email = nil }
        return try await self.openSession(
            subject: "\(CredentialType.accessToken):\(name):\(subject)",
            kind: CredentialType.accessToken,
            email: email,
            name: answer["name"]?.stringValue,
            profile: UserClaims.profile(from: answer),
            customData: UserClaims.customData(from: answer, names: configuration.customClaims)
        )
    }

    /// The issuer's answer about `token`, once it proves the token live and meant for this device.
    private func checkAccessToken(
        _ token: String,
        with issuer: OutsideCredentials.AccessTokenIssuer
    ) async throws(ProviderError) -> [String: JSONValue] {
        let configuration = issuer.configuration
        let answer: [String: JSONValue]
        do throws(OIDCFailure) {
            switch configuration.check {
            case .introspection(let url):
                var headers: [(String, String)] = []
                var form = [("token", token), ("token_type_hint", "access_token")]
                if let clientID = configuration.clientID {
                    if let secret = configuration.clientSecret {
                        let pair = FormEncoding.escape(clientID) + ":" + FormEncoding.escape(secret)
                        headers.append(("Authorization", "Basic " + Data(pair.utf8).base64EncodedString()))
                    } else {
                        form.append(("client_id", clientID))
                    }
                }
                let response = try await issuer.http.post(url, form: form, headers: headers)
                guard response.status == 200 else {
                    // The endpoint refused usher's client, not the token: the configuration is at fault.
                    throw OIDCFailure.oauth(status: response.status, error: "introspection_refused", description: nil)
                }
                answer = try response.jsonObject(what: "the introspection answer")
                guard case .bool(true)? = answer["active"] else {
                    throw OIDCFailure.oauth(status: 401, error: "inactive_token", description: nil)
                }
            case .userinfo(let url):
                let response = try await issuer.http.get(url, bearerToken: token)
                guard response.status == 200 else {
                    throw OIDCFailure.oauth(status: response.status, error: "token_refused", description: nil)
                }
                answer = try response.jsonObject(what: "the userinfo answer")
            }
        } catch {
            throw Self.accessTokenError(error)
        }
        if let expiry = answer["exp"] {
            // A number of seconds (RFC 7662 section 2.2: an integer, though some issuers send a fraction); anything else
            // (a string, null, a boolean) cannot be checked, so it proves nothing.
            let seconds: Double
            switch expiry {
            case .int(let value): seconds = Double(value)
            case .double(let value) where value.isFinite: seconds = value
            default: throw .providerError(error: "invalid_response", description: "the answer's exp is not a number")
            }
            guard seconds > Double(self.clock.now().millisecondsSinceEpoch) / 1000 else {
                throw .invalidCredentials("the access token has expired")
            }
        }
        if !configuration.audiences.isEmpty, let audience = answer["aud"] {
            let named: [String] =
                switch audience {
                case .string(let value): [value]
                case .array(let values): values.compactMap(\.stringValue)
                default: []
                }
            guard named.contains(where: { configuration.audiences.contains($0) }) else {
                throw .invalidCredentials("the access token is meant for another audience")
            }
        }
        if !configuration.acceptedClientIDs.isEmpty,
            let client = answer["client_id"]?.stringValue ?? answer["azp"]?.stringValue
        {
            guard configuration.acceptedClientIDs.contains(client) else {
                throw .invalidCredentials("the access token was issued to a client this device does not accept")
            }
        }
        return answer
    }

    /// How a failed check reads: a token the issuer says is not live is the credentials' fault; an endpoint that
    /// cannot be reached is an outage; anything else the issuer's (or usher's configuration).
    private static func accessTokenError(_ failure: OIDCFailure) -> ProviderError {
        switch failure {
        case .unavailable(let message):
            return .unavailable(message)
        case .oauth(_, "inactive_token"?, _):
            return .invalidCredentials("the access token is not active (expired, revoked or unknown to the issuer)")
        case .oauth(let status, "token_refused"?, _) where status == 400 || status == 401 || status == 403:
            return .invalidCredentials("the issuer refused the access token (HTTP \(status))")
        case .oauth(let status, _, _):
            return .providerError(error: "http_\(status)", description: "the issuer's endpoint answered HTTP \(status)")
        case .invalid(let message):
            return .providerError(error: "invalid_response", description: message)
        }
    }

    /// The subject member of an answer as a string (a number as its decimal digits), 1 to 1024 bytes.
    private static func accessTokenSubject(
        _ answer: [String: JSONValue],
        _ configuration: AccessTokenIssuerConfiguration
    ) throws(ProviderError) -> String {
        let fields: [String] =
            configuration.subjectField.map { [$0] }
            ?? {
                if case .introspection = configuration.check { return ["sub", "username"] }
                return ["sub"]
            }()
        for field in fields {
            let subject: String
            switch answer[field] {
            case .string(let value)?: subject = value
            case .int(let value)?: subject = String(value)
            default: continue
            }
            guard !subject.isEmpty, subject.utf8.count <= 1024 else { continue }
            return subject
        }
        throw .providerError(
            error: "no_identity",
            description: "the issuer's answer has no \(fields.joined(separator: " or ")) naming the user"
        )
    }
}
