import Foundation
import Testing
import UsherCore
import UsherProtocol
import UsherTestSupport

@testable import UsherProviders

/// Revocation at the provider.
extension OIDCProviderTests {
    @Test func revocationUsesTheRefreshTokenAndReportsTheOutcome() async throws {
        try await OIDCFixture.with { fixture in
            let provider = fixture.provider()
            fixture.server.handle("/revoke") { _ in .json(200, "") }
            #expect(await provider.revoke(Self.session()))
            let request = try #require(fixture.server.requests(to: "/revoke").last)
            #expect(request.form["token"] == "refresh-1")
            #expect(request.form["token_type_hint"] == "refresh_token")
            #expect(request.headers["authorization"]?.hasPrefix("Basic ") == true)
            // A service account's stand-in is never sent: its access token is revoked instead.
            #expect(
                await provider.revoke(
                    Self.session(refreshToken: "cc.x", providerData: OIDCProvider.clientCredentialsData)
                )
            )
            let service = try #require(fixture.server.requests(to: "/revoke").last)
            #expect(service.form["token"] == "access-1")
            #expect(service.form["token_type_hint"] == "access_token")

            fixture.server.handle("/revoke") { _ in .json(503, "{}") }
            #expect(await provider.revoke(Self.session()) == false)
            fixture.server.handle("/revoke") { _ in .stall }
            #expect(await fixture.provider(timeoutMilliseconds: 300).revoke(Self.session()) == false)
            #expect(!fixture.logs.text.contains("refresh-1"))
        }
        try await OIDCFixture.with { fixture in
            fixture.serveDiscovery(["revocation_endpoint": .null])
            #expect(await fixture.provider().revoke(Self.session()) == false)
        }
    }
}
