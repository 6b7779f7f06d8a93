import Foundation
import Testing
import UsherCore
import UsherProtocol
import UsherTestSupport

@testable import UsherProviders

/// Discovery: checked, not cached when it fails, retried in the background.
extension OIDCProviderTests {
    @Test func discoveryIsCheckedAndNotCachedWhenItFails() async throws {
        try await OIDCFixture.with { fixture in
            fixture.server.handle("/token") { _ in OIDCFixture.tokens() }
            fixture.server.handle("/userinfo") { _ in Self.userinfo() }
            let provider = fixture.provider()
            func loginError() async -> ProviderError? {
                await Self.providerError { try await provider.authenticate(credentials: Self.password) }
            }
            fixture.serveDiscovery(["issuer": "https://evil.example.com"])
            guard case .providerError("invalid_response", let description?)? = await loginError() else {
                Issue.record("an issuer mismatch must be a provider error")
                return
            }
            #expect(description.contains("is not the configured issuer"))

            fixture.serveDiscovery(["token_endpoint": "http://id.example.com/token"])
            guard case .providerError(_, let plainHTTP?)? = await loginError() else {
                Issue.record("a plain http endpoint off loopback must be refused")
                return
            }
            #expect(plainHTTP.contains("https"))

            fixture.server.handle("/.well-known/openid-configuration") { _ in .json(503, "{}") }
            guard case .unavailable? = await loginError() else {
                Issue.record("a 503 at discovery is transient")
                return
            }
            fixture.server.handle("/.well-known/openid-configuration") { _ in .json(200, "<html>") }
            guard case .providerError("invalid_response", _)? = await loginError() else {
                Issue.record("a discovery document that is not JSON is a provider error")
                return
            }
            // Once the document is right, the next request discovers again and succeeds.
            fixture.serveDiscovery()
            #expect(await loginError() == nil)
        }
    }

    @Test func discoveryIsRetriedInTheBackgroundWithBackoff() async throws {
        try await OIDCFixture.with { fixture in
            let attempts = Locked(0)
            let document = fixture.discoveryDocument(["device_authorization_endpoint": .null])
            fixture.server.handle("/.well-known/openid-configuration") { _ in
                let attempt = attempts.withLock { count in
                    count += 1
                    return count
                }
                return attempt < 3 ? .json(503, "{}") : .json(200, document)
            }
            let provider = fixture.provider()
            // Before discovery every credential type is offered (a service account only with a client secret).
            #expect(provider.credentialTypes == OIDCProvider.allCredentialTypes)
            #expect(!fixture.provider(clientSecret: nil).credentialTypes.contains("client_credentials"))
            let started = ContinuousClock.now
            provider.startDiscovery()
            provider.startDiscovery()
            try await eventually(timeout: .seconds(60)) { !provider.credentialTypes.contains("device_code") }
            // Two failures: waits of about 1 s and 2 s (less up to 10 % jitter) before the third attempt.
            #expect(ContinuousClock.now - started >= .milliseconds(2700))
            #expect(attempts.withLock { $0 } == 3)
            #expect(fixture.logs.text.contains("discovery failed; retrying"))
            #expect(
                provider.credentialTypes == ["authorization_code", "password", "client_credentials", "token_exchange"]
            )
        }
    }
}
