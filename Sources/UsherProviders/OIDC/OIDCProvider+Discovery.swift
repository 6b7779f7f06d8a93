import Logging
import Synchronization
import UsherCore
import UsherProtocol

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Discovery: fetching the provider's metadata in the background, retried with backoff until it answers.
extension OIDCProvider {
    // MARK: - Discovery

    /// Starts fetching discovery in the background, retrying with backoff until it succeeds. Idempotent.
    package func startDiscovery() {
        let start = self.state.withLock { state in
            defer { state.discoveryStarted = true }
            return !state.discoveryStarted
        }
        guard start else { return }
        self.background.submit { [self] in await self.discoverUntilDone() }
    }

    /// Stops retrying discovery: a reload removed or replaced this provider. Logins under way still finish.
    package func retire() {
        self.state.withLock { $0.retired = true }
    }

    func discoverUntilDone() async {
        var failures = 0
        while !Task.isCancelled {
            if self.state.withLock({ $0.discovered != nil || $0.retired }) { return }
            do {
                _ = try await self.fetchDiscovery()
                return
            } catch {
                failures += 1
                let delay = Int64.random(in: TokenDeadlines.backoffMilliseconds(failures: failures))
                self.logger.warning(
                    "discovery failed; retrying",
                    metadata: [
                        "error": "\(Self.describe(error))", "retry_in_ms": "\(delay)", "attempt": "\(failures)",
                    ]
                )
                do {
                    try await self.clock.sleep(until: self.clock.now().adding(milliseconds: delay))
                } catch {
                    return
                }
            }
        }
    }

    /// Discovery's result: the cached one, or fetched now.
    func discovered() async throws(ProviderError) -> Discovered {
        if let discovered = self.state.withLock({ $0.discovered }) { return discovered }
        do {
            return try await self.fetchDiscovery()
        } catch .unavailable(let message) {
            throw .unavailable("provider \(self.name) is unreachable (discovery: \(message))")
        } catch {
            throw error.providerError
        }
    }

    func fetchDiscovery() async throws(OIDCFailure) -> Discovered {
        let url = OIDCMetadata.discoveryURL(issuer: self.configuration.issuer)
        let response = try await self.http.get(url)
        guard response.status == 200 else {
            throw .invalid("discovery at \(url) answered HTTP \(response.status)")
        }
        let metadata = try OIDCMetadata.parse(
            response.jsonObject(what: "the discovery document"),
            expectedIssuer: self.configuration.issuer
        )
        var algorithms = Set(metadata.idTokenSigningAlgorithms).intersection(JWTVerifier.supportedAlgorithms)
        if algorithms.isEmpty { algorithms = ["RS256"] }
        let verifier = JWTVerifier(
            keys: .url(
                metadata.jwksURI,
                httpClient: self.http.client,
                timeout: self.http.timeout,
                logger: self.logger
            ),
            policy: JWTValidationPolicy(
                issuer: metadata.issuer,
                audiences: [self.configuration.clientID],
                algorithms: algorithms,
                requireIssuedAt: true
            ),
            clock: self.clock
        )
        let discovered = Discovered(metadata: metadata, verifier: verifier)
        let isFirst = self.state.withLock { state in
            guard state.discovered == nil else { return false }
            state.discovered = discovered
            return true
        }
        if isFirst {
            let credentials = Self.allCredentialTypes.filter { self.unsupportedReason(for: $0, metadata) == nil }
            self.logger.info(
                "discovery done",
                metadata: [
                    "issuer": "\(metadata.issuer)", "credentials": "\(credentials.joined(separator: ","))",
                    "revocation": "\(metadata.revocationEndpoint != nil)",
                ]
            )
        }
        return self.state.withLock { $0.discovered } ?? discovered
    }
}
