import Crypto
import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// Narrowed tokens from each kind of provider, asked for explicitly (`access_token {audience, scopes}`) by a client
/// whose rules do not narrow (the test process: root or the daemon's uid): DPoP-bound local tokens, token exchange
/// (RFC 8693) at a real server that has it, a refresh grant with a narrower scope at one that does not, and
/// `not_supported` where neither can give what is asked.
@Suite(.integrationHangGuard)
struct NarrowedTokenProviderTests {
    @Test func aNarrowedLocalTokenIsBoundToTheSessionKeyAndItsProofNamesIt() async throws {
        try await DaemonProcess.with(config: DPoPTests.config) { daemon in
            let client = try daemon.connect()
            let ann = try await DPoPTests.logIn(client, "ann@example.com")
            let server = try await DPoPTests.ResourceServer(daemon)
            defer { server.directory.remove() }
            let url = server.base + "/photos"
            let full = try #require(try await client.result("access_token")["access_token"]?.stringValue)
            let jkt = try DPoPTests.decodePart(full, 1)["cnf"]?["jkt"]

            let narrowing: [String: JSONValue] = ["audience": .string(server.base), "scopes": ["photos:read"]]
            let answer = try await client.result("access_token", narrowing)
            #expect(answer["token_type"] == "DPoP")
            let token = try #require(answer["access_token"]?.stringValue)
            #expect(token != full)
            let claims = try DPoPTests.decodePart(token, 1)
            #expect(claims["cnf"]?["jkt"] == jkt)
            #expect(claims["aud"]?.stringValue == server.base)
            #expect(claims["scope"] == "photos:read")
            #expect(claims["sub"]?.stringValue == ann)

            // The proof for the narrowed token names it (ath), and the resource server takes the pair.
            var proofParams = narrowing
            proofParams["htm"] = "GET"
            proofParams["htu"] = .string(url)
            let proof = try #require(try await client.result("dpop_proof", proofParams)["proof"]?.stringValue)
            let ath = DPoPTests.base64URL(SHA256.hash(data: Data(token.utf8)))
            #expect(try DPoPTests.decodePart(proof, 1)["ath"]?.stringValue == ath)
            let accepted = try await DPoPTests.curl(url, ["Authorization: DPoP \(token)", "DPoP: \(proof)"])
            #expect(accepted.status == 200, "\(accepted.response)")
            // A proof for the session's token does not go with the narrowed one.
            let other = try #require(
                try await client.result("dpop_proof", ["htm": "GET", "htu": .string(url)])["proof"]?.stringValue
            )
            #expect(try await DPoPTests.curl(url, ["Authorization: DPoP \(token)", "DPoP: \(other)"]).status == 401)

            // Bad narrowings are refused with invalid_params, before anything else.
            #expect(try await client.errorCode("access_token", ["scopes": []]) == "invalid_params")
            #expect(try await client.errorCode("access_token", ["scopes": ["two words"]]) == "invalid_params")
            #expect(try await client.errorCode("access_token", ["audience": "has space"]) == "invalid_params")
        }
    }

    static let tokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"

    @Test func tokenExchangeNarrowsAnOpenIDConnectSession() async throws {
        let tokenExchange = Self.tokenExchange
        try await TokenExchangeServer.with { server in
            try await DaemonProcess.with(config: OIDCTokenExchangeTests.config(server)) { daemon in
                let client = try daemon.connect()
                _ = try await client.result(
                    "login",
                    [
                        "credentials": [
                            "type": "token_exchange", "subject_token": .string(try await server.subjectToken()),
                            "subject_token_type": "access_token",
                        ]
                    ]
                )
                let full = try #require(try await client.result("access_token")["access_token"]?.stringValue)
                let answer = try await client.result(
                    "access_token",
                    ["audience": "https://api.example.com", "scopes": ["email"], "min_valid": 5]
                )
                let token = try #require(answer["access_token"]?.stringValue)
                #expect(token != full)
                #expect(answer["audience"] == "https://api.example.com")
                #expect(answer["scopes"] == ["email"])
                // The exchange asked the server for that audience and scope, and its token has that scope.
                #expect(
                    server.log.contains(
                        "token request: \(tokenExchange) audience=https://api.example.com scope=email\n"
                    ),
                    "\(server.log)"
                )
                #expect(try DPoPTests.decodePart(token, 1)["scope"] == "email")
                // Held and handed out again, without another exchange. (The exchanged token lives as long as the
                // subject token has left, which may be little: min_valid 5 keeps the held one good enough however slow
                // the machine is between the two requests.)
                let again = try await client.result(
                    "access_token",
                    ["audience": "https://api.example.com", "scopes": ["email"], "min_valid": 5]
                )
                #expect(again["access_token"]?.stringValue == token)
                #expect(server.log.components(separatedBy: "token request: \(tokenExchange) audience=").count == 2)
                #expect(!daemon.log.contains(token))
            }
        }
    }
}

extension NarrowedTokenProviderTests {
    /// With `narrow_by_refresh`, at a provider without token exchange (idpyoidc, whose `grant_types` here leave token
    /// exchange out): a refresh grant with the narrower scope, whose rotated refresh token the session keeps.
    @Test func aRefreshGrantWithANarrowerScopeWhereThereIsNoTokenExchange() async throws {
        try await TokenExchangeServer.with(dpop: true) { server in
            let config =
                OIDCDPoPTests.config(server) + """

                    grant_types = ["authorization_code", "refresh_token"]
                    narrow_by_refresh = true
                    """
            try await DaemonProcess.with(config: config) { daemon in
                let client = try daemon.connect()
                _ = try await OIDCDPoPTests.logIn(client)
                let full = try #require(try await client.result("access_token")["access_token"]?.stringValue)
                let answer = try await client.result("access_token", ["scopes": ["email"]])
                let token = try #require(answer["access_token"]?.stringValue)
                #expect(token != full)
                #expect(answer["scopes"] == ["email"])
                #expect(answer["token_type"] == "DPoP", "bound to the session's key, as the session's tokens are")
                #expect(try DPoPTests.decodePart(token, 1)["scope"] == "email")
                #expect(server.log.contains("token request: refresh_token scope=email\n"), "\(server.log)")
                // The session's own token is the one it had.
                #expect(try await client.result("access_token")["access_token"]?.stringValue == full)

                // The session kept the refresh token the narrowing rotated: it still refreshes, with full scope.
                _ = try await client.result("refresh")
                let refreshed = try #require(try await client.result("access_token")["access_token"]?.stringValue)
                #expect(refreshed != full)
                let scope = try DPoPTests.decodePart(refreshed, 1)["scope"]?.stringValue ?? ""
                #expect(scope.contains("openid"), "\(scope)")

                // An audience needs token exchange: refused, never the full token.
                let refused = try await client.call("access_token", ["audience": "https://api.example.com"])
                #expect(refused["error"]?["code"] == "not_supported")
                #expect(refused["result"] == nil)
                #expect(!daemon.log.contains(token))
            }
        }
    }
}

/// django-oauth-toolkit has no token exchange, and revokes (or overwrites) the previous access token when a refresh
/// token is used: without `narrow_by_refresh` (the default), narrowing there is refused.
@Suite(.integrationHangGuard, .oidcServer)
struct NarrowedTokenRefusalTests {
    @Test func noTokenExchangeAndNoNarrowingByRefreshIsNotSupported() async throws {
        let server = try OIDCIntegrationTests.server()
        try await DaemonProcess.with(config: server.providers()) { daemon in
            let client = try daemon.connect()
            _ = try await client.result(
                "login",
                ["credentials": ["type": "password", "username": "alice", "password": "alice-password"]]
            )
            let full = try #require(try await client.result("access_token")["access_token"]?.stringValue)
            for narrowing: [String: JSONValue] in [["scopes": ["email"]], ["audience": "https://api.example.com"]] {
                let refused = try await client.call("access_token", narrowing)
                #expect(refused["error"]?["code"] == "not_supported", "\(narrowing)")
                #expect(refused["result"] == nil)
                #expect(refused["error"]?["message"]?.stringValue?.contains("token exchange") == true)
            }
            // The session's own token is untouched: still valid at the provider.
            #expect(try await client.result("access_token")["access_token"]?.stringValue == full)
            let userinfo = try await DPoPTests.curl(server.issuer + "/userinfo/", ["Authorization: Bearer \(full)"])
            #expect(userinfo.status == 200, "\(userinfo.response)")
        }
    }

    @Test func aSessionWithoutARefreshTokenCannotBeNarrowedByRefresh() async throws {
        let server = try OIDCIntegrationTests.server()
        let config = server.providers(defaultProvider: "service").replacingOccurrences(
            of: "scopes = [\"read\"]",
            with: "scopes = [\"read\"]\nnarrow_by_refresh = true"
        )
        #expect(config.contains("narrow_by_refresh = true"), "the service provider's section was found")
        try await DaemonProcess.with(config: config) { daemon in
            let client = try daemon.connect()
            _ = try await client.result("login", ["credentials": ["type": "client_credentials"]])
            let refused = try await client.call("access_token", ["scopes": ["read"]])
            #expect(refused["error"]?["code"] == "not_supported")
            // Refused for the session (no refresh token), not because narrowing by refresh is off.
            #expect(refused["error"]?["message"]?.stringValue?.contains("for this session") == true, "\(refused)")
        }
    }
}
