import Foundation
import Testing
import UsherCore
import UsherProtocol
import UsherTestSupport

@testable import UsherProviders

/// Refresh: rotation, and which failures are transient, misconfigured or permanent.
extension OIDCProviderTests {
    @Test func refreshRotatesAndKeepsTheSubject() async throws {
        try await OIDCFixture.with { fixture in
            let provider = fixture.provider()
            fixture.server.handle("/token") { request in
                request.form["refresh_token"] == "refresh-1"
                    ? OIDCFixture.tokens(access: "access-2", refresh: "refresh-2", expiresIn: 30)
                    : .json(400, #"{"error":"invalid_grant"}"#)
            }
            let refreshed = try await provider.refresh(Self.session())
            #expect(refreshed.tokens.accessToken == "access-2")
            #expect(refreshed.tokens.refreshToken == "refresh-2")
            let request = try #require(fixture.server.requests(to: "/token").last)
            #expect(request.form["grant_type"] == "refresh_token")
            #expect(request.headers["authorization"]?.hasPrefix("Basic ") == true)

            // A provider that does not rotate: no refresh token in the answer (the registry keeps the old one).
            fixture.server.handle("/token") { _ in OIDCFixture.tokens(access: "access-3", refresh: nil) }
            #expect(try await provider.refresh(Self.session()).tokens.refreshToken == nil)

            // A refreshed ID token must be about the same person.
            fixture.server.handle("/token") { _ in
                OIDCFixture.tokens(idToken: try? fixture.idToken(subject: "someone-else"))
            }
            guard
                case .unavailable(let message)? = await Self.providerError({
                    try await provider.refresh(Self.session())
                })
            else {
                Issue.record("another subject on refresh must fail")
                return
            }
            #expect(message.contains("another subject"))
            fixture.server.handle("/token") { _ in OIDCFixture.tokens(idToken: try? fixture.idToken()) }
            #expect(try await provider.refresh(Self.session()).tokens.accessToken == "access-1")
            #expect(!fixture.logs.text.contains("refresh-1"))
            #expect(!fixture.logs.text.contains("access-"))
        }
    }

    /// How a refresh failure counts.
    enum RefreshFailure {
        /// The session is over (`session_revoked`).
        case revoked
        /// The daemon's client configuration is at fault: the user stays logged in, retried after a long wait.
        case misconfigured
        /// Retried with the usual backoff.
        case transient
        /// A 4xx that says nothing more precise (`provider_rejected`): retried once, the same again ends the session.
        case rejected
    }

    static let refreshFailures: [(String, ScriptedHTTPServer.Reply, RefreshFailure)] = [
        ("invalid_grant", .json(400, #"{"error":"invalid_grant","error_description":"revoked"}"#), .revoked),
        ("bare 400", .status(400, contentType: "text/plain", body: "Bad Request"), .revoked),
        ("bare 401", .status(401, contentType: "text/plain", body: "Unauthorized"), .revoked),
        ("invalid_client", .json(401, #"{"error":"invalid_client"}"#), .misconfigured),
        (
            "invalid_client 400", .json(400, #"{"error":"invalid_client","error_description":"bad secret"}"#),
            .misconfigured
        ),
        ("unauthorized_client", .json(400, #"{"error":"unauthorized_client"}"#), .misconfigured),
        // The answer of a provider whose user was deleted there (issue 21): not an outage.
        (
            "invalid_request", .json(400, #"{"error":"invalid_request","error_description":"There is no 'user'"}"#),
            .rejected
        ),
        ("403 access_denied", .json(403, #"{"error":"access_denied"}"#), .rejected),
        ("404", .status(404, contentType: "text/plain", body: "Not Found"), .rejected),
        ("408", .json(408, "{}"), .transient),
        ("500", .status(500, contentType: "text/plain", body: "boom"), .transient),
        ("503", .json(503, "{}"), .transient),
        ("429", .json(429, "{}"), .transient),
        ("malformed 200", .json(200, "not json"), .transient),
        ("garbage", .garbage, .transient),
        ("stall", .stall, .transient),
    ]

    @Test(arguments: NamedCase.cases(Self.refreshFailures) { $0.0 })
    func refreshFailuresAreTransientMisconfiguredOrPermanent(
        _ testCase: NamedCase<(String, ScriptedHTTPServer.Reply, RefreshFailure)>
    ) async throws {
        let (name, reply, expected) = testCase.value
        try await OIDCFixture.with { fixture in
            fixture.server.handle("/token") { _ in reply }
            let error = await Self.providerError {
                try await fixture.provider(timeoutMilliseconds: 500).refresh(Self.session())
            }
            switch (error, expected) {
            case (.sessionRevoked?, .revoked), (.unavailable?, .transient): break
            case (.rejected(let refusal, _)?, .rejected):
                #expect(refusal.hasPrefix("HTTP 4"), "\(name): \(refusal)")
            case (.misconfigured(let message)?, .misconfigured):
                #expect(message.contains("client"), "\(name): \(message)")
            default: Issue.record("\(name): expected \(expected), got \(String(describing: error))")
            }
        }
    }

    @Test func refreshWhileTheProviderIsUnreachableIsTransient() async throws {
        try await OIDCFixture.with { fixture in
            let closed = try RefusingPort()
            let error = await Self.providerError {
                try await fixture.provider(issuer: closed.base).refresh(Self.session())
            }
            guard case .unavailable? = error else {
                Issue.record("expected unavailable, got \(String(describing: error))")
                return
            }
        }
    }
}
