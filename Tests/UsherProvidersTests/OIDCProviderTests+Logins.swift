import Foundation
import Testing
import UsherCore
import UsherProtocol
import UsherTestSupport

@testable import UsherProviders

/// Logins in progress belong to the uid that began them and count against its own quota (issue 36, items 6 and 7):
/// one uid cannot evict another's browser login, nor take every device-login slot.
extension OIDCProviderTests {
    static let redirect = "http://127.0.0.1:5555/callback"

    /// The credentials that complete `begun`, with the token endpoint answering for its nonce.
    static func completion(
        of begun: StartedLogin,
        _ fixture: OIDCFixture,
        _ issued: Locked<[String: String]>
    ) throws -> [String: JSONValue] {
        let authorizeURL = try #require(begun.authorizeURL)
        let url = try #require(URLComponents(string: authorizeURL))
        let nonce = try #require(url.queryItems?.first { $0.name == "nonce" }?.value)
        let code = "code-\(UUID().uuidString)"
        issued.withLock { $0[code] = nonce }
        let verifier = try #require(begun.codeVerifier)
        let redirectURI = try #require(begun.redirectURI)
        let state = try #require(begun.state)
        return [
            "type": "authorization_code", "code": .string(code), "code_verifier": .string(verifier),
            "redirect_uri": .string(redirectURI), "state": .string(state),
        ]
    }

    @Test func aUidEvictsOnlyItsOwnBrowserLogins() async throws {
        try await OIDCFixture.with { fixture in
            let provider = fixture.provider(clientSecret: nil)
            let issued = fixture.answerCodesWithIDTokens()
            fixture.server.handle("/userinfo") { _ in Self.userinfo() }
            func begin(_ uid: UInt32) async throws -> StartedLogin {
                try await provider.beginLogin(type: .authorizationCode, redirectURI: Self.redirect, owner: uid)
            }

            let victims = try await begin(2000)
            // Uid 1000 begins far more than its share: every one is accepted, its own oldest making way.
            var own: [StartedLogin] = []
            for _ in 0..<(OIDCProvider.maximumPendingAuthorizations + 10) { own.append(try await begin(1000)) }
            let evicted = try Self.completion(of: own[0], fixture, issued)
            #expect(await Self.providerError { try await provider.authenticate(credentials: evicted) } != nil)
            let kept = try Self.completion(of: own[own.count - 1], fixture, issued)
            #expect(await Self.providerError { try await provider.authenticate(credentials: kept) } == nil)
            // The other uid's login is still there.
            let theirs = try Self.completion(of: victims, fixture, issued)
            #expect(await Self.providerError { try await provider.authenticate(credentials: theirs) } == nil)
        }
    }

    @Test func aFullTableRefusesAUidWithNoBrowserLoginOfItsOwn() async throws {
        try await OIDCFixture.with { fixture in
            let provider = fixture.provider(clientSecret: nil)
            let uids = OIDCProvider.maximumPendingAuthorizations / OIDCProvider.maximumPendingAuthorizationsPerUID
            for uid in 0..<uids {
                for _ in 0..<OIDCProvider.maximumPendingAuthorizationsPerUID {
                    _ = try await provider.beginLogin(
                        type: .authorizationCode,
                        redirectURI: Self.redirect,
                        owner: UInt32(3000 + uid)
                    )
                }
            }
            let refused = await Self.providerError {
                try await provider.beginLogin(type: .authorizationCode, redirectURI: Self.redirect, owner: 4000)
            }
            guard case .unavailable? = refused else {
                Issue.record("a uid with no login in a full table: \(String(describing: refused))")
                return
            }
            // A uid with logins in the table makes way with its own oldest.
            _ = try await provider.beginLogin(type: .authorizationCode, redirectURI: Self.redirect, owner: 3000)
        }
    }

    @Test func aUidHasItsOwnShareOfDeviceLogins() async throws {
        let clock = ManualClock(now: Timestamp.now())
        try await OIDCFixture.with(clock: clock) { fixture in
            fixture.server.handle("/device") { _ in
                .json(
                    200,
                    #"{"device_code":"d","user_code":"U","verification_uri":"https://x.example/d","expires_in":600}"#
                )
            }
            fixture.server.handle("/token") { _ in .json(400, #"{"error":"authorization_pending"}"#) }
            let provider = fixture.provider(clientSecret: nil)
            var mine: [String] = []
            for _ in 0..<OIDCProvider.maximumDeviceLoginsPerUID {
                mine.append(
                    try #require(
                        try await provider.beginLogin(type: .deviceCode, redirectURI: nil, owner: 1000).loginID
                    )
                )
            }
            let refused = await Self.providerError {
                try await provider.beginLogin(type: .deviceCode, redirectURI: nil, owner: 1000)
            }
            guard case .unavailable(let message)? = refused else {
                Issue.record("a ninth device login of one uid: \(String(describing: refused))")
                return
            }
            #expect(message.contains("this uid"))
            // Another uid still begins one, and each login is its beginner's.
            let theirs = try #require(
                try await provider.beginLogin(type: .deviceCode, redirectURI: nil, owner: 1001).loginID
            )
            #expect(provider.owner(ofLogin: theirs) == 1001)
            #expect(mine.allSatisfy { provider.owner(ofLogin: $0) == 1000 })
            #expect(OIDCProvider.loggable(theirs).hasPrefix("corp."))
            #expect(!OIDCProvider.loggable(theirs).contains(String(theirs.dropFirst("corp.".count))))
        }
    }
}

/// `prompt=consent` goes with `offline_access` (issue 42, item 14): OpenID Connect Core section 11 has a provider grant
/// offline access only after consent, and one that reads it strictly otherwise ties the refresh token to the browser.
extension OIDCProviderTests {
    static let promptCases: [(String, [String], String?, String?)] = [
        ("offline_access asks for consent", ["openid", "email", "offline_access"], nil, "consent"),
        ("no offline_access, no prompt", ["openid", "email", "profile"], nil, nil),
        ("a configured prompt wins", ["openid", "offline_access"], "login consent", "login consent"),
        ("an empty prompt sends none", ["openid", "offline_access"], "", nil),
    ]

    @Test(arguments: NamedCase.cases(Self.promptCases) { $0.0 })
    func browserLoginsAskForConsentWithOfflineAccess(
        _ testCase: NamedCase<(String, [String], String?, String?)>
    ) async throws {
        let (_, scopes, configured, expected) = testCase.value
        try await OIDCFixture.with { fixture in
            let provider = fixture.provider(clientSecret: nil, scopes: scopes, prompt: configured)
            let begun = try await provider.beginLogin(type: .authorizationCode, redirectURI: Self.redirect, owner: 0)
            let authorizeURL = try #require(begun.authorizeURL)
            let query = try #require(URLComponents(string: authorizeURL)).queryItems ?? []
            #expect(query.first { $0.name == "prompt" }?.value == expected)
            #expect(query.filter { $0.name == "prompt" }.count == (expected == nil ? 0 : 1))
        }
    }
}
