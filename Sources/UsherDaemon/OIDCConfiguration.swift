import UsherProviders

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension DaemonConfiguration {
    /// A `type = "oidc"` section: `issuer` and `client_id` are required; `client_secret_file`, `scopes`,
    /// `redirect_uri`, `token_endpoint_auth`, `request_timeout` and `grant_types` are optional.
    static func oidcProvider(
        _ section: inout ConfigSection,
        secretFiles: inout [(setting: String, path: String)]
    ) throws(ConfigurationError) -> OIDCProviderConfiguration {
        guard let issuer = try section.string("issuer") else {
            throw section.error("issuer", "is required for an oidc provider (the provider's issuer URL)")
        }
        if let problem = OIDCProviderConfiguration.problem(withIssuer: issuer) {
            throw section.error("issuer", problem)
        }
        guard let clientID = try section.string("client_id"), !clientID.isEmpty else {
            throw section.error("client_id", "is required for an oidc provider")
        }
        var configuration = OIDCProviderConfiguration(issuer: issuer, clientID: clientID)
        if let path = try section.string("client_secret_file") {
            let (secret, found) = try Self.readSecret(path, section: section)
            configuration.clientSecret = secret
            secretFiles.append((setting: "\(section.path).client_secret_file", path: found))
        }
        if let scopes = try section.stringArray("scopes") {
            guard !scopes.isEmpty, scopes.allSatisfy(Self.isValidScope) else {
                throw section.error("scopes", "must be a non-empty list of scope names without spaces or quotes")
            }
            configuration.scopes = scopes
        }
        if let prompt = try section.string("prompt") {
            let values = prompt.split(separator: " ", omittingEmptySubsequences: false)
            guard prompt.isEmpty || values.allSatisfy({ ["none", "login", "consent", "select_account"].contains($0) })
            else {
                throw section.error(
                    "prompt",
                    "must be \"\" or space-separated values of none, login, consent, select_account, not \"\(prompt.prefix(64))\""
                )
            }
            configuration.prompt = prompt
        }
        if let redirectURI = try section.string("redirect_uri") {
            if let problem = OIDCProviderConfiguration.problem(withRedirectURI: redirectURI) {
                throw section.error("redirect_uri", problem)
            }
            configuration.redirectURI = redirectURI
        }
        if let method = try section.string("token_endpoint_auth") {
            guard let parsed = OIDCProviderConfiguration.ClientAuthentication(rawValue: method) else {
                throw section.error(
                    "token_endpoint_auth",
                    "must be \"client_secret_basic\", \"client_secret_post\" or \"none\", not \"\(method)\""
                )
            }
            configuration.clientAuthentication = parsed
        } else {
            configuration.clientAuthentication = configuration.clientSecret == nil ? .none : .clientSecretBasic
        }
        if let problem = configuration.clientAuthenticationProblem() {
            throw section.error("token_endpoint_auth", problem)
        }
        configuration.requestTimeoutMilliseconds =
            try section.duration("request_timeout", in: 100...300_000) ?? configuration.requestTimeoutMilliseconds
        if let names = try section.stringArray("grant_types") {
            guard !names.isEmpty else {
                throw section.error("grant_types", "must name at least one grant (leave it out to trust discovery)")
            }
            var grants: Set<String> = []
            for name in names {
                guard let grant = OIDCProviderConfiguration.grantTypeNames[name] else {
                    throw section.error(
                        "grant_types",
                        "has no grant named \"\(name)\" (known: "
                            + OIDCProviderConfiguration.grantTypeNames.keys.sorted().joined(separator: ", ") + ")"
                    )
                }
                grants.insert(grant)
            }
            configuration.grantTypes = grants
        }
        if let url = try section.string("delete_account_url") {
            if let problem = OIDCProviderConfiguration.problem(withEndpoint: url) {
                throw section.error("delete_account_url", problem)
            }
            configuration.deleteAccountURL = url
        }
        if let method = try section.string("delete_account_method") {
            guard method == "DELETE" || method == "POST" else {
                throw section.error("delete_account_method", "must be \"DELETE\" or \"POST\", not \"\(method)\"")
            }
            configuration.deleteAccountMethod = method
        }
        configuration.customClaims = try Self.customClaims(&section)
        configuration.dpop = try section.bool("dpop") ?? configuration.dpop
        configuration.narrowByRefresh = try section.bool("narrow_by_refresh") ?? configuration.narrowByRefresh
        return configuration
    }

    /// RFC 6749 §3.3: a scope token is printable ASCII without space, `"` or `\`.
    private static func isValidScope(_ scope: String) -> Bool {
        !scope.isEmpty
            && scope.unicodeScalars.allSatisfy {
                $0.value >= 0x21 && $0.value <= 0x7E && $0 != "\"" && $0 != "\\"
            }
    }

    /// Reads a client secret: an absolute path as it is; a relative name from `$CREDENTIALS_DIRECTORY` (systemd's
    /// `LoadCredential=`) when it is there, else next to the configuration file. Trailing newlines are dropped.
    static func readSecret(
        _ path: String,
        section: ConfigSection,
        setting: String = "client_secret_file"
    ) throws(ConfigurationError) -> (secret: String, path: String) {
        var candidates: [String] = []
        if path.hasPrefix("/") {
            candidates = [path]
        } else {
            if let credentials = ProcessInfo.processInfo.environment["CREDENTIALS_DIRECTORY"], !credentials.isEmpty {
                candidates.append("\(credentials)/\(path)")
            }
            let directory = URL(fileURLWithPath: section.file).deletingLastPathComponent().path
            candidates.append("\(directory)/\(path)")
        }
        guard let found = candidates.first(where: { FileManager.default.fileExists(atPath: $0) }) else {
            throw section.error(setting, "no such file (looked at \(candidates.joined(separator: ", ")))")
        }
        guard let data = FileManager.default.contents(atPath: found), var secret = String(data: data, encoding: .utf8)
        else { throw section.error(setting, "cannot read \(found)") }
        while let last = secret.unicodeScalars.last, last == "\n" || last == "\r" { secret.unicodeScalars.removeLast() }
        guard !secret.isEmpty else { throw section.error(setting, "\(found) is empty") }
        return (secret, found)
    }
}
