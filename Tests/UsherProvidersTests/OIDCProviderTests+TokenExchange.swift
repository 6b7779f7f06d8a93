import Foundation
import Testing
import UsherCore
import UsherProtocol
import UsherTestSupport

@testable import UsherProviders

/// Token exchange (RFC 8693).
extension OIDCProviderTests {
    @Test func tokenExchangeSendsTheSubjectToken() async throws {
        try await OIDCFixture.with { fixture in
            fixture.server.handle("/token") { request in
                request.form["grant_type"] == "urn:ietf:params:oauth:grant-type:token-exchange"
                    ? OIDCFixture.tokens(
                        idToken: try? fixture.idToken(subject: "exchanged"),
                        extra: ["issued_token_type": "urn:ietf:params:oauth:token-type:access_token"]
                    ) : .json(400, #"{"error":"unsupported_grant_type"}"#)
            }
            fixture.server.handle("/userinfo") { _ in Self.userinfo(["sub": "exchanged"]) }
            let authentication = try await fixture.provider().authenticate(
                credentials: ["type": "token_exchange", "subject_token": "outside-jwt", "subject_token_type": "jwt"]
            )
            #expect(authentication.subject == "exchanged")
            #expect(authentication.kind == "token_exchange")
            let request = try #require(fixture.server.requests(to: "/token").last)
            #expect(request.form["subject_token"] == "outside-jwt")
            #expect(request.form["subject_token_type"] == "urn:ietf:params:oauth:token-type:jwt")
            guard
                case .invalidParams? = await Self.providerError({
                    try await fixture.provider().authenticate(
                        credentials: ["type": "token_exchange", "subject_token": "x", "subject_token_type": "photo"]
                    )
                })
            else {
                Issue.record("an unknown token type must be refused")
                return
            }
            // A provider whose discovery lists its grants and not this one is not asked.
            fixture.serveDiscovery(["grant_types_supported": ["authorization_code", "refresh_token"]])
            guard
                case .unsupportedCredentials? = await Self.providerError({
                    try await fixture.provider().authenticate(
                        credentials: ["type": "token_exchange", "subject_token": "x", "subject_token_type": "jwt"]
                    )
                })
            else {
                Issue.record("an unsupported grant must be refused before any request")
                return
            }
        }
    }
}
