import UsherCore

extension DaemonConfiguration {
    /// `custom_claims = ["...", ...]` of a provider or issuer section: the claims kept as users' `custom_data`. At most
    /// `CustomClaimNames.maximumCount` names; never a secret's (`at_hash`, `nonce`, a token: refused here, so
    /// that a configuration cannot make usher keep one).
    static func customClaims(_ section: inout ConfigSection) throws(ConfigurationError) -> [String] {
        guard let names = try section.stringArray("custom_claims") else { return [] }
        guard names.count <= CustomClaimNames.maximumCount else {
            throw section.error("custom_claims", "may name at most \(CustomClaimNames.maximumCount) claims")
        }
        for name in names {
            if let problem = CustomClaimNames.problem(with: name) {
                throw section.error("custom_claims", "\"\(name)\" \(problem)")
            }
        }
        return Array(Set(names)).sorted()
    }
}
