import Foundation
import Testing
import UsherCore
import UsherProtocol
import UsherTestSupport

@testable import UsherProviders

/// The client credentials grant for service accounts.
extension OIDCProviderTests {
    @Test func clientCredentialsLogInTheServiceAccountAndRenewWithANewGrant() async throws {
        try await OIDCFixture.with { fixture in
            let provider = fixture.provider(scopes: ["openid", "profile", "api.read"])
            fixture.server.handle("/token") { request in
                request.form["grant_type"] == "client_credentials"
                    ? OIDCFixture.tokens(access: "service-\(UUID().uuidString)", refresh: nil)
                    : .json(400, #"{"error":"unsupported_grant_type"}"#)
            }
            let authentication = try await provider.authenticate(credentials: ["type": "client_credentials"])
            #expect(authentication.subject == "client:usher")
            #expect(authentication.kind == "client_credentials")
            #expect(authentication.name == "usher")
            #expect(authentication.email == nil)
            let standIn = try #require(authentication.tokens.refreshToken)
            #expect(standIn.hasPrefix("cc."))
            let request = try #require(fixture.server.requests(to: "/token").last)
            // The user scopes make no sense for a service account.
            #expect(request.form["scope"] == "api.read")
            #expect(fixture.server.requests(to: "/userinfo").isEmpty)

            let session = ProviderSession(
                userID: "u_s",
                subject: authentication.subject,
                tokens: authentication.tokens,
                providerData: authentication.providerData
            )
            let renewed = try await provider.refresh(session)
            #expect(renewed.tokens.accessToken != authentication.tokens.accessToken)
            #expect(renewed.tokens.refreshToken == standIn)
            let renewal = try #require(fixture.server.requests(to: "/token").last)
            #expect(renewal.form["grant_type"] == "client_credentials")
            #expect(renewal.form["refresh_token"] == nil)

            // A refused secret is a configuration error, as for any refresh: the service account stays logged in.
            fixture.server.handle("/token") { _ in .json(401, #"{"error":"invalid_client"}"#) }
            guard case .misconfigured? = await Self.providerError({ try await provider.refresh(session) }) else {
                Issue.record("a refused client secret is a configuration error")
                return
            }
            // A client no longer allowed the grant ends the service account's session.
            fixture.server.handle("/token") { _ in .json(400, #"{"error":"unauthorized_client"}"#) }
            guard case .sessionRevoked? = await Self.providerError({ try await provider.refresh(session) }) else {
                Issue.record("a client no longer allowed the grant ends the service account's session")
                return
            }
            // Client credentials need a confidential client.
            guard
                case .unsupportedCredentials? = await Self.providerError({
                    try await fixture.provider(clientSecret: nil).authenticate(credentials: [
                        "type": "client_credentials"
                    ])
                })
            else {
                Issue.record("a public client has no service account")
                return
            }
        }
    }
}
