import Foundation
import Testing
import UsherCore
import UsherProtocol
import UsherTestSupport

@testable import UsherProviders

/// The device authorization grant.
extension OIDCProviderTests {
    @Test func deviceFlowPollsAtTheIntervalAndSlowsDown() async throws {
        let clock = ManualClock(now: Timestamp.now())
        try await OIDCFixture.with(clock: clock) { fixture in
            let polls = Locked(0)
            fixture.server.handle("/device") { request in
                request.form["client_id"] == "usher" && request.form["scope"] == "openid email profile"
                    ? .json(
                        200,
                        #"{"device_code":"dev-1","user_code":"ABCD-EFGH","verification_uri":"https://id.example.com/device","verification_uri_complete":"https://id.example.com/device?code=ABCD-EFGH","expires_in":600,"interval":2}"#
                    ) : .json(400, #"{"error":"invalid_request"}"#)
            }
            fixture.server.handle("/token") { request in
                guard request.form["device_code"] == "dev-1",
                    request.form["grant_type"] == "urn:ietf:params:oauth:grant-type:device_code"
                else { return .json(400, #"{"error":"invalid_grant"}"#) }
                let poll = polls.withLock { count in
                    count += 1
                    return count
                }
                switch poll {
                case 1: return .json(400, #"{"error":"authorization_pending"}"#)
                case 2: return .json(400, #"{"error":"slow_down"}"#)
                case 3: return .json(503, "{}")
                default: return OIDCFixture.tokens(access: "device-access")
                }
            }
            fixture.server.handle("/userinfo") { _ in Self.userinfo() }
            let provider = fixture.provider(clientSecret: nil)
            let begun = try await provider.beginLogin(type: .deviceCode, redirectURI: nil, owner: 1000)
            let loginID = try #require(begun.loginID)
            #expect(loginID.hasPrefix("corp."))
            #expect(begun.userCode == "ABCD-EFGH")
            #expect(begun.verificationURI == "https://id.example.com/device")
            #expect(begun.verificationURIComplete == "https://id.example.com/device?code=ABCD-EFGH")
            #expect(begun.expiresAt == clock.now().adding(milliseconds: 600_000))
            #expect(provider.owner(ofLogin: loginID) == 1000)
            #expect(provider.owner(ofLogin: "corp.unknown") == nil)

            try await withThrowingTaskGroup(of: Authentication.self) { group in
                group.addTask { try await provider.finishLogin(loginID) }
                /// Moves time on and returns the number of polls once the poller sleeps again. (The clock wakes a
                /// sleeper whose time came at once, so a poll that is due is under way when `advance` returns.)
                func pollsAfter(advancing seconds: Int64) async throws -> Int {
                    try await eventually { clock.sleeperCount == 1 }
                    clock.advance(bySeconds: seconds)
                    try await eventually { clock.sleeperCount == 1 }
                    return polls.withLock { $0 }
                }
                #expect(try await pollsAfter(advancing: 1) == 0)
                #expect(try await pollsAfter(advancing: 1) == 1)  // at the interval: pending
                #expect(try await pollsAfter(advancing: 2) == 2)  // slow_down: the interval grows by 5 s
                #expect(try await pollsAfter(advancing: 6) == 2)
                #expect(try await pollsAfter(advancing: 1) == 3)  // 7 s later; 503 is transient: keep polling
                #expect(try await pollsAfter(advancing: 7) == 4)
                let authentication = try #require(try await group.next())
                #expect(authentication.subject == "user-1")
                #expect(authentication.kind == "device_code")
                #expect(authentication.tokens.accessToken == "device-access")
            }
            // The session is handed over once.
            guard case .expiredToken? = await Self.providerError({ try await provider.finishLogin(loginID) }) else {
                Issue.record("a collected login cannot be collected again")
                return
            }
            #expect(!fixture.logs.text.contains("dev-1"))
            #expect(!fixture.logs.text.contains("device-access"))
        }
    }

    static let deviceEndings: [(String, ScriptedHTTPServer.Reply, ProviderError)] = [
        ("denied", .json(400, #"{"error":"access_denied"}"#), .accessDenied("the login was declined at the provider")),
        (
            "expired at the provider", .json(400, #"{"error":"expired_token"}"#),
            .expiredToken("the code expired before the login was approved")
        ),
        (
            "another error", .json(400, #"{"error":"invalid_grant","error_description":"gone"}"#),
            .invalidCredentials("the provider rejected the grant: gone")
        ),
    ]

    @Test(arguments: NamedCase.cases(Self.deviceEndings) { $0.0 })
    func deviceLoginsEndWithTheProvidersVerdict(
        _ testCase: NamedCase<(String, ScriptedHTTPServer.Reply, ProviderError)>
    ) async throws {
        let (name, reply, expected) = testCase.value
        let clock = ManualClock(now: Timestamp.now())
        try await OIDCFixture.with(clock: clock) { fixture in
            fixture.server.handle("/device") { _ in
                .json(
                    200,
                    #"{"device_code":"d","user_code":"U","verification_uri":"https://x.example/d","expires_in":60}"#
                )
            }
            fixture.server.handle("/token") { _ in reply }
            let provider = fixture.provider(clientSecret: nil)
            let loginID = try #require(
                try await provider.beginLogin(type: .deviceCode, redirectURI: nil, owner: 1000).loginID
            )
            try await eventually { clock.sleeperCount == 1 }
            clock.advance(bySeconds: 5)  // the default interval
            let error = await Self.providerError { try await provider.finishLogin(loginID) }
            #expect(error == expected, "\(name)")
            // A late login_wait learns the same.
            #expect(await Self.providerError { try await provider.finishLogin(loginID) } == expected)
        }
    }

    @Test func deviceLoginsExpireLocallyAndUncollectedSessionsAreRevoked() async throws {
        let clock = ManualClock(now: Timestamp.now())
        try await OIDCFixture.with(clock: clock) { fixture in
            fixture.server.handle("/device") { _ in
                .json(
                    200,
                    #"{"device_code":"d","user_code":"U","verification_uri":"https://x.example/d","expires_in":3,"interval":1}"#
                )
            }
            fixture.server.handle("/token") { _ in .json(400, #"{"error":"authorization_pending"}"#) }
            let provider = fixture.provider(clientSecret: nil)
            let expiring = try #require(
                try await provider.beginLogin(type: .deviceCode, redirectURI: nil, owner: 1000).loginID
            )
            for _ in 0..<4 {
                try await eventually { clock.sleeperCount == 1 }
                clock.advance(bySeconds: 1)
            }
            #expect(
                await Self.providerError { try await provider.finishLogin(expiring) }
                    == .expiredToken("the device code expired before the login was approved")
            )

            // Approved, but nobody calls login_wait: after ten minutes the login is forgotten and its session revoked.
            fixture.server.handle("/device") { _ in
                .json(
                    200,
                    #"{"device_code":"d2","user_code":"V","verification_uri":"https://x.example/d","interval":1}"#
                )
            }
            fixture.server.handle("/token") { _ in OIDCFixture.tokens(refresh: "uncollected-refresh") }
            fixture.server.handle("/userinfo") { _ in Self.userinfo() }
            fixture.server.handle("/revoke") { _ in .json(200, "") }
            let abandoned = try #require(
                try await provider.beginLogin(type: .deviceCode, redirectURI: nil, owner: 1000).loginID
            )
            try await eventually { clock.sleeperCount == 2 }  // the expired login's grace period, and this poll
            clock.advance(bySeconds: 1)
            try await eventually { !fixture.server.requests(to: "/userinfo").isEmpty }
            try await eventually { clock.sleeperCount == 2 }
            clock.advance(bySeconds: 600)
            try await eventually { !fixture.server.requests(to: "/revoke").isEmpty }
            #expect(fixture.server.requests(to: "/revoke").first?.form["token"] == "uncollected-refresh")
            #expect(provider.owner(ofLogin: abandoned) == nil)
            #expect(provider.owner(ofLogin: expiring) == nil)
        }
    }

    @Test func deviceCodeCredentialsPointToLoginBegin() async throws {
        try await OIDCFixture.with { fixture in
            guard
                case .invalidParams(_, let message)? = await Self.providerError({
                    try await fixture.provider().authenticate(credentials: ["type": "device_code"])
                })
            else {
                Issue.record("device_code in login must explain the two-step flow")
                return
            }
            #expect(message.contains("login_begin"))
            guard
                case .unsupportedCredentials? = await Self.providerError({
                    try await fixture.provider().authenticate(credentials: ["type": "email_password"])
                })
            else {
                Issue.record("unknown credential types are unsupported")
                return
            }
        }
    }
}
