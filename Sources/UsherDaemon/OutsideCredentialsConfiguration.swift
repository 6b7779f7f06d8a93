import UsherProviders

extension DaemonConfiguration {
    /// Reads a local provider's sections for outside credentials: `[providers.NAME.jwt]`,
    /// `[providers.NAME.id_token.ISSUER]` and `[providers.NAME.function]`.
    static func outsideCredentials(
        _ section: inout ConfigSection,
        into configuration: inout LocalProviderConfiguration
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
        if var function = try section.section("function") {
            configuration.function = try Self.functionHook(&function)
            try function.finish()
        }
    }

    /// `issuer`, `audience`, `jwks_file` or `jwks_url`, `algorithms`, `leeway`, and for `[jwt]` `subject_claim` and
    /// `email_claim`.
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
