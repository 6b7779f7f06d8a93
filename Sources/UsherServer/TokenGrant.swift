import UsherCore
import UsherProtocol

/// Which tokens `token` gives a peer: the session's own (and any narrowing it asks for), or only the narrowed tokens
/// of the rules that match it (`[[access.rule]] audience`, `scopes`: docs/least-privilege.md).
package enum TokenGrant: Sendable, Hashable {
    /// The session's token, or whatever narrower token the peer asks for.
    case full
    /// Only tokens within one of these, in the rules' order: a request that names nothing gets the first.
    case narrowed([TokenAudience])

    /// The narrowing a request gets: nil for the session's own token.
    ///
    /// A narrowed peer may ask for less than a rule gives (fewer scopes), never more: another audience, or a scope
    /// its rule does not list, is `permission_denied`. A rule without `scopes` gives tokens without a scope claim:
    /// the program does not choose one (it would choose `admin`).
    package func narrowing(for requested: TokenAudience) throws(ResponseError) -> TokenAudience? {
        switch self {
        case .full:
            return requested.narrows ? requested : nil
        case .narrowed(let allowed):
            for rule in allowed {
                if let audience = requested.audience, audience != rule.audience { continue }
                if let scopes = requested.scopes {
                    guard let ruleScopes = rule.scopes, Set(scopes).isSubset(of: ruleScopes) else { continue }
                }
                return TokenAudience(audience: rule.audience, scopes: requested.scopes ?? rule.scopes)
            }
            let asked = [
                requested.audience.map { "audience \($0)" },
                requested.scopes.map { "scopes \($0.joined(separator: " "))" },
            ].compactMap { $0 }
            let allowedText = allowed.map(Self.describe).joined(separator: "; ")
            throw ResponseError(
                .permissionDenied,
                "this program may not have a token for \(asked.joined(separator: " with ")): its rules give only "
                    + allowedText
            )
        }
    }

    private static func describe(_ narrowing: TokenAudience) -> String {
        [
            narrowing.audience.map { "audience \($0)" },
            narrowing.scopes.map { "scopes \($0.joined(separator: " "))" } ?? "no scopes",
        ].compactMap { $0 }.joined(separator: " with ")
    }
}

extension AccessPolicy {
    /// Whether some rule narrows tokens: only then does a token request look at the rules again.
    package var narrowsTokens: Bool { self.rules.contains { $0.narrowing != nil } }

    /// What `token` gives `peer`. Root and the daemon's uid, and peers no narrowing rule matches, get `.full`; a peer
    /// that a narrowing rule matches is narrowed, unless a rule that does not narrow gives it `token` on every seat
    /// (a seat-scoped rule that does not narrow does not lift the narrowing of another rule: the narrower wins).
    package func tokenGrant(for peer: PeerCredentials) -> TokenGrant {
        if self.isPrivileged(peer) { return .full }
        var narrowings: [TokenAudience] = []
        for rule in self.rules where rule.allow.contains(.token) && rule.matches(peer) {
            guard let narrowing = rule.narrowing else {
                if rule.seats == nil { return .full }
                continue
            }
            if !narrowings.contains(narrowing) { narrowings.append(narrowing) }
        }
        return narrowings.isEmpty ? .full : .narrowed(narrowings)
    }
}

extension PeerProgram {
    /// `azp` of the tokens the daemon signs for this program: its systemd service, else its unit in the user's
    /// service manager, else its executable; nil when it could not be identified. (A login session's scope and the
    /// user manager's own service name no program, and are passed over.)
    package var authorizedParty: String? {
        let identity = self.identity
        guard identity.identified else { return nil }
        if let unit = identity.unit, !unit.hasPrefix("user@"), !unit.hasPrefix("session-") { return unit }
        return identity.userUnit ?? identity.executable
    }
}

extension MethodHandler.Call {
    /// The narrowing a token request gets, from what it asks for and what the peer's rules give (`TokenGrant`); nil:
    /// the session's own token. Costs nothing more than a look at the request when no rule narrows.
    func tokenNarrowing(_ requested: TokenAudience) throws(ResponseError) -> TokenNarrowing? {
        let settings = self.dispatcher.settings
        let grant: TokenGrant = settings.narrowsTokens ? settings.policy.tokenGrant(for: self.context.peer) : .full
        guard let narrowing = try grant.narrowing(for: requested) else { return nil }
        return TokenNarrowing(
            narrowing,
            party: self.context.peer.program.authorizedParty ?? "uid:\(self.context.peer.uid)"
        )
    }
}
