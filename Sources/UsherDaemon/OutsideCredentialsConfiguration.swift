import UsherProviders

extension DaemonConfiguration {
    /// Reads a local provider's sections for outside credentials: `[providers.NAME.jwt]`,
    /// `[providers.NAME.id_token.ISSUER]`, `[providers.NAME.access_token.ISSUER]` and `[providers.NAME.function]`.
    static func outsideCredentials(
        _ section: inout ConfigSection,
        into configuration: inout LocalProviderConfiguration,
        secretFiles: inout [(setting: String, path: String)]
    ) throws(ConfigurationError) {
        if var jwt = try section.section("jwt") {
            configuration.jwt = try Self.outsideToken(&jwt, readsClaimNames: true)
            try jwt.finish()
        }
        if var idTokens = try section.section("id_token") {
            for name in idTokens.keys {
                guard var issuer = try idTokens.section(name) else { continue }
                guard (1...64).contains(name.utf8.count),
                    name.unicodeScalars.allSatisfy({
                        $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-" || $0 == "_")
                    })
                else {
                    throw issuer.error(nil, "issuer names are 1 to 64 characters of a-z, A-Z, 0-9, '-', '_'")
                }
                configuration.idTokenIssuers[name] = try Self.outsideToken(&issuer, readsClaimNames: false)
                try issuer.finish()
            }
            try idTokens.finish()
        }
        if var accessTokens = try section.section("access_token") {
            for name in accessTokens.keys {
                guard var issuer = try accessTokens.section(name) else { continue }
                guard Self.isValidIssuerName(name) else {
                    throw issuer.error(nil, "issuer names are 1 to 64 characters of a-z, A-Z, 0-9, '-', '_'")
                }
                configuration.accessTokenIssuers[name] = try Self.accessTokenIssuer(&issuer, secretFiles: &secretFiles)
                try issuer.finish()
            }
            try accessTokens.finish()
        }
        if var function = try section.section("function") {
            configuration.function = try Self.functionHook(&function)
            try function.finish()
        }
    }

    /// `issuer`, `audience`, `jwks_file` or `jwks_url`, `algorithms`, `leeway`, `custom_claims`, and for `[jwt]`
    /// `subject_claim` and `email_claim`.
    private static func outsideToken(
        _ section: inout ConfigSection,
        readsClaimNames: Bool
    ) throws(ConfigurationError) -> OutsideTokenConfiguration {
        guard let issuer = try section.string("issuer"), !issuer.isEmpty else {
            throw section.error("issuer", "is required: the iss claim the tokens carry")
        }
        let audiences: [String]?
        if case .array? = section.values["audience"] {
            audiences = try section.stringArray("audience")
        } else {
            audiences = try section.string("audience").map { [$0] }
        }
        guard let audiences, !audiences.isEmpty, audiences.allSatisfy({ !$0.isEmpty }) else {
            throw section.error("audience", "is required: a string, or an array of strings, that aud must name")
        }
        let keys: OutsideTokenConfiguration.KeySet
        switch (try section.string("jwks_file"), try section.string("jwks_url")) {
        case (let path?, nil):
            guard path.hasPrefix("/") else { throw section.error("jwks_file", "must be an absolute path") }
            keys = .file(path)
        case (nil, let url?):
            if let problem = JWKSSource.problem(withURL: url) { throw section.error("jwks_url", problem) }
            keys = .url(url)
        case (nil, nil):
            throw section.error(nil, "needs jwks_file or jwks_url: where the signing keys are")
        case (_?, _?):
            throw section.error(nil, "give jwks_file or jwks_url, not both")
        }
        var configuration = OutsideTokenConfiguration(issuer: issuer, audiences: audiences, keys: keys)
        if let algorithms = try section.stringArray("algorithms") {
            guard !algorithms.isEmpty else { throw section.error("algorithms", "must name at least one algorithm") }
            if let unsupported = algorithms.first(where: { !JWTVerifier.supportedAlgorithms.contains($0) }) {
                throw section.error(
                    "algorithms",
                    "\"\(unsupported)\" is not supported (supported: "
                        + JWTVerifier.supportedAlgorithms.sorted().joined(separator: ", ") + "; never none or HMAC)"
                )
            }
            configuration.algorithms = algorithms
        }
        if readsClaimNames {
            for (key, keyPath) in [
                ("subject_claim", \OutsideTokenConfiguration.subjectClaim),
                ("email_claim", \OutsideTokenConfiguration.emailClaim),
            ] {
                guard let claim = try section.string(key) else { continue }
                guard !claim.isEmpty else { throw section.error(key, "must not be empty") }
                configuration[keyPath: keyPath] = claim
            }
        }
        if let leeway = try section.duration("leeway", in: 0...600_000) {
            configuration.leewaySeconds = leeway / 1000
        }
        configuration.customClaims = try Self.customClaims(&section)
        return configuration
    }

    private static func isValidIssuerName(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count)
            && name.unicodeScalars.allSatisfy({
                $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-" || $0 == "_")
            })
    }

    /// `[providers.NAME.access_token.ISSUER]`: `introspection_url` (with `client_id` and `client_secret_file`) or
    /// `userinfo_url`; `audience`, `accepted_client_ids`, `subject_field`, `email_field`, `request_timeout`,
    /// `custom_claims`.
    private static func accessTokenIssuer(
        _ section: inout ConfigSection,
        secretFiles: inout [(setting: String, path: String)]
    ) throws(ConfigurationError) -> AccessTokenIssuerConfiguration {
        let check: AccessTokenIssuerConfiguration.Check
        switch (try section.string("introspection_url"), try section.string("userinfo_url")) {
        case (let url?, nil):
            if let problem = AccessTokenIssuerConfiguration.problem(withURL: url) {
                throw section.error("introspection_url", problem)
            }
            check = .introspection(url: url)
        case (nil, let url?):
            if let problem = AccessTokenIssuerConfiguration.problem(withURL: url) {
                throw section.error("userinfo_url", problem)
            }
            check = .userinfo(url: url)
        case (nil, nil):
            throw section.error(nil, "needs introspection_url or userinfo_url: where tokens are checked")
        case (_?, _?):
            throw section.error(nil, "give introspection_url or userinfo_url, not both")
        }
        var configuration = AccessTokenIssuerConfiguration(check: check)
        configuration.clientID = try section.string("client_id")
        if let path = try section.string("client_secret_file") {
            guard configuration.clientID != nil else {
                throw section.error("client_secret_file", "needs client_id: the client the secret belongs to")
            }
            let (secret, found) = try Self.readSecret(path, section: section)
            configuration.clientSecret = secret
            secretFiles.append((setting: "\(section.path).client_secret_file", path: found))
        }
        if case .introspection = check, configuration.clientID == nil {
            throw section.error("client_id", "is required with introspection_url: the client usher introspects as")
        }
        if case .array? = section.values["audience"] {
            configuration.audiences = try section.stringArray("audience") ?? []
        } else if let audience = try section.string("audience") {
            configuration.audiences = [audience]
        }
        configuration.acceptedClientIDs = try section.stringArray("accepted_client_ids") ?? []
        for key in ["subject_field", "email_field"] {
            guard let field = try section.string(key) else { continue }
            guard !field.isEmpty else { throw section.error(key, "must not be empty") }
            if key == "subject_field" { configuration.subjectField = field } else { configuration.emailField = field }
        }
        configuration.requestTimeoutMilliseconds =
            try section.duration("request_timeout", in: 100...300_000) ?? configuration.requestTimeoutMilliseconds
        configuration.customClaims = try Self.customClaims(&section)
        return configuration
    }

    /// `command`, `timeout`, `max_concurrent`.
    private static func functionHook(
        _ section: inout ConfigSection
    ) throws(ConfigurationError)
        -> FunctionHookConfiguration
    {
        guard let command = try section.stringArray("command"), let program = command.first else {
            throw section.error(
                "command",
                "is required: the program and its arguments, such as [\"/usr/lib/usher/auth-hook\"]"
            )
        }
        guard program.hasPrefix("/") else {
            throw section.error("command", "the program must be an absolute path (it is run without a shell or PATH)")
        }
        // Each run is supervised by this very binary (`usherd function-supervisor`); /proc/self/exe reaches it even
        // after a package upgrade replaced the file.
        var configuration = FunctionHookConfiguration(command: command, supervisor: "/proc/self/exe")
        configuration.timeoutMilliseconds =
            try section.duration("timeout", in: 100...300_000) ?? configuration.timeoutMilliseconds
        configuration.maximumConcurrent =
            try section.int("max_concurrent", in: 1...64) ?? configuration.maximumConcurrent
        return configuration
    }
}
