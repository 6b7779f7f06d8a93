import Crypto
import Logging
import NIOPosix
import Testing
import UsherCore
import UsherProtocol
import UsherProviders
import UsherStore
import UsherTestSupport

/// Refresh: rotation, revocation, and a session lifetime that rotation never extends.
extension LocalProviderTests {
    @Test("refresh rotates the refresh token; an old one never works again", .timeLimit(.minutes(1)))
    func rotation() async throws {
        try await Self.withProvider { fixture in
            let provider = fixture.provider
            let clock = fixture.clock
            let login = try await provider.authenticate(credentials: ["type": "anonymous"])
            clock.advance(bySeconds: 60)
            let first = try await fixture.refresh(Self.session(login))
            #expect(first.tokens.refreshToken != nil)
            #expect(first.tokens.refreshToken != login.tokens.refreshToken)
            #expect(first.tokens.accessToken != login.tokens.accessToken)
            #expect(first.tokens.issuedAt == clock.now())

            await #expect(throws: ProviderError.sessionRevoked("the refresh token is revoked or expired")) {
                try await provider.refresh(Self.session(login))
            }
            let second = try await fixture.refresh(Self.session(login.subject, first.tokens))
            #expect(second.tokens.refreshToken != first.tokens.refreshToken)
            await #expect(throws: ProviderError.self) {
                try await provider.refresh(Self.session(login.subject, first.tokens))
            }
        }
    }

    @Test(
        "refresh itself writes nothing: the rotation happens when its pending write is committed, once",
        .timeLimit(.minutes(1))
    )
    func rotationIsDeferredToTheCommit() async throws {
        try await Self.withProvider { fixture in
            let provider = fixture.provider
            let login = try await provider.authenticate(credentials: ["type": "anonymous"])
            // Two answers for the same token (as when the first could not be stored): neither consumed the grant.
            let uncommitted = try await provider.refresh(Self.session(login))
            let answer = try await provider.refresh(Self.session(login))
            let rotation = try #require(answer.pendingWrite)
            let staleRotation = try #require(uncommitted.pendingWrite)
            try await fixture.database.commit(
                SessionChange(generation: nil, saved: [], deleted: [], pendingWrites: [rotation])
            )
            // Committed: the new token works, the old one does not, and the other answer's rotation can no longer be
            // committed (the grant it consumes is gone), nor anything committed with it.
            let next = try await provider.refresh(Self.session(login.subject, answer.tokens))
            #expect(next.tokens.refreshToken != answer.tokens.refreshToken)
            await #expect(throws: ProviderError.sessionRevoked("the refresh token is revoked or expired")) {
                try await provider.refresh(Self.session(login))
            }
            let bystander = User(
                id: "u_bystander",
                provider: "local",
                subject: "s",
                kind: "anonymous",
                email: nil,
                name: nil,
                state: .loggedOut,
                addedGeneration: 1,
                createdAt: fixture.clock.now(),
                lastLoginAt: nil,
                lastActiveAt: nil,
                activeGeneration: 0,
                tokens: nil,
                providerData: nil
            )
            await #expect(throws: ProviderError.sessionRevoked("the refresh token is revoked or expired")) {
                try await fixture.database.commit(
                    SessionChange(
                        generation: 7,
                        saved: [bystander],
                        deleted: [],
                        pendingWrites: [staleRotation]
                    )
                )
            }
            let state = try await fixture.database.loadSessions()
            #expect(state.generation == 0, "the whole change was rolled back")
            #expect(state.users.isEmpty)
        }
    }

    @Test("a revoked session cannot be refreshed", .timeLimit(.minutes(1)))
    func revoke() async throws {
        try await Self.withProvider { fixture in
            let provider = fixture.provider
            let login = try await provider.authenticate(credentials: ["type": "anonymous"])
            #expect(await provider.revoke(Self.session(login)))
            await #expect(throws: ProviderError.sessionRevoked("the refresh token is revoked or expired")) {
                try await provider.refresh(Self.session(login))
            }
            #expect(await provider.revoke(Self.session(login)), "revoking twice is still revoked")
        }
    }

    @Test("refresh_token_lifetime counts from login: rotation never extends it", .timeLimit(.minutes(1)))
    func absoluteLifetime() async throws {
        try await Self.withProvider(
            accessLifetimeMilliseconds: 10 * 60_000,
            refreshLifetimeMilliseconds: 60 * 60_000
        ) { fixture in
            let provider = fixture.provider
            let clock = fixture.clock
            let start = clock.now()
            let end = start.adding(seconds: 3600)
            let login = try await provider.authenticate(credentials: ["type": "anonymous"])
            #expect(login.tokens.refreshExpiresAt == end)

            clock.advance(bySeconds: 30 * 60)
            let middle = try await fixture.refresh(Self.session(login))
            #expect(middle.tokens.refreshExpiresAt == end)
            #expect(middle.tokens.expiresAt == start.adding(seconds: 40 * 60))

            clock.advance(bySeconds: 25 * 60)
            let late = try await fixture.refresh(Self.session(login.subject, middle.tokens))
            #expect(late.tokens.refreshExpiresAt == end)
            #expect(late.tokens.expiresAt == end, "an access token never outlives its session")

            clock.advance(bySeconds: 5 * 60)
            await #expect(throws: ProviderError.sessionRevoked("the refresh token is revoked or expired")) {
                try await provider.refresh(Self.session(login.subject, late.tokens))
            }
        }
    }
}
