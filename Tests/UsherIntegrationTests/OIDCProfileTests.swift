import Foundation
import Testing
import UsherCore
import UsherProtocol
import UsherTestSupport

/// Profiles from a real OpenID Connect server (django-oauth-toolkit), and its opaque access tokens as `access_token`
/// credentials of a local provider, checked by introspection (RFC 7662) and by userinfo.
@Suite(.integrationHangGuard, .oidcServer)
struct OIDCProfileTests {
    static func server() throws -> OIDCTestServer {
        try #require(OIDCTestServer.shared, "the suite's OpenID Connect server is not running")
    }

    static func passwordLogin(_ client: LineConnection, _ user: String) async throws -> JSONValue {
        try await client.result(
            "login",
            [
                "provider": "corp",
                "credentials": [
                    "type": "password", "username": .string(user), "password": .string("\(user)-password"),
                ],
            ]
        )
    }

    // MARK: - Profiles

    /// A verified email that changed at the provider becomes the user's email, as a fresh login would make it (issue 42,
    /// item 15): the user is listed under the address it has now.
    @Test func refreshProfileTakesTheNewVerifiedEmail() async throws {
        let server = try Self.server()
        try await server.setEmail(of: "peggy", to: "peggy@example.com")
        try await DaemonProcess.with(config: server.providers()) { daemon in
            let client = try daemon.connect()
            let login = try await Self.passwordLogin(client, "peggy")
            #expect(login["user"]?["email"] == "peggy@example.com")
            try await server.setEmail(of: "peggy", to: "peggy.new@example.com")
            let refreshed = try await client.result("refresh_profile")
            #expect(refreshed["user"]?["email"] == "peggy.new@example.com")
            #expect(refreshed["user"]?["profile"]?["email"] == "peggy.new@example.com")
            let listed = try #require(try await client.result("list_users")["users"]?.arrayValue)
            #expect(listed.map { $0["email"] } == ["peggy.new@example.com"])
            // A fresh login gives the same.
            #expect(try await Self.passwordLogin(client, "peggy")["user"]?["email"] == "peggy.new@example.com")
        }
    }

    @Test func refreshProfileReadsTheClaimsAgainAfterTheyChangedAtTheProvider() async throws {
        let server = try Self.server()
        try await server.setProfile(of: "frank", firstName: "Frank", lastName: "Tester", groups: ["staff"])
        let config = server.providers(corp: #"custom_claims = ["groups", "nonce_hint"]"#)
        try await DaemonProcess.with(config: config) { daemon in
            let client = try daemon.connect()
            let subscriber = try daemon.connect()
            _ = try await subscriber.result("subscribe", ["events": ["user_changed"]])
            let login = try await Self.passwordLogin(client, "frank")
            let profile = login["user"]?["profile"]
            #expect(profile?["name"] == "Frank Tester")
            #expect(profile?["given_name"] == "Frank")
            #expect(profile?["family_name"] == "Tester")
            #expect(profile?["preferred_username"] == "frank")
            #expect(profile?["email"] == "frank@example.com")
            #expect(profile?["email_verified"] == true)
            // Nothing but the standard claims: no sub, iss, aud, nonce, at_hash, groups.
            for claim in ["sub", "iss", "aud", "nonce", "at_hash", "groups", "exp", "iat", "auth_time"] {
                #expect(profile?[claim] == nil, "\(claim)")
            }
            #expect(login["user"]?["custom_data"] == ["groups": ["staff"]])
            let generation = try #require(login["generation"]?.intValue)

            // An administrator renames the user and changes its groups at the provider.
            try await server.setProfile(of: "frank", firstName: "Francis", lastName: "Renamed", groups: ["admins"])
            let refreshed = try await client.result("refresh_profile")
            #expect(refreshed["user"]?["profile"]?["name"] == "Francis Renamed")
            #expect(refreshed["user"]?["profile"]?["given_name"] == "Francis")
            #expect(refreshed["user"]?["name"] == "Francis Renamed")
            #expect(refreshed["user"]?["custom_data"] == ["groups": ["admins"]])
            #expect(try #require(refreshed["generation"]?.intValue) > generation)
            let event = try await subscriber.nextEvent()
            #expect(event["event"] == "user_changed")
            #expect(event["data"]?["user"]?["profile"]?["family_name"] == "Renamed")
            #expect(event["data"]?["user"]?["custom_data"] == ["groups": ["admins"]])

            // Unchanged claims: the same generation, no event (the next event is the one after the next change).
            let same = try await client.result("refresh_profile")
            #expect(same["generation"] == refreshed["generation"])

            // Durable.
            try await daemon.restart()
            let user = try await daemon.connect().result("current_user")["user"]
            #expect(user?["profile"]?["name"] == "Francis Renamed")
            #expect(user?["custom_data"] == ["groups": ["admins"]])

            // update_profile is a local account's: an OpenID Connect user's profile comes from the provider.
            let again = try daemon.connect()
            #expect(try await again.errorCode("update_profile", ["name": "X"]) == "unsupported_credentials")
        }
    }

    // MARK: - Opaque access tokens

    /// A local provider that takes the server's access tokens three ways: by introspection as the usher-password
    /// client, by userinfo, and by introspection accepting only tokens issued to another client.
    static func accessTokenConfig(_ server: OIDCTestServer) -> String {
        let secrets = server.directory.path
        return server.providers(defaultProvider: "local") + """

            [providers.local]
            type = "local"

            [providers.local.access_token.dot]
            introspection_url = "\(server.issuer)/introspect/"
            client_id = "usher-password"
            client_secret_file = "\(secrets)/password.secret"
            custom_claims = ["scope"]

            [providers.local.access_token.dotinfo]
            userinfo_url = "\(server.issuer)/userinfo/"
            subject_field = "preferred_username"
            email_field = "email"

            [providers.local.access_token.strict]
            introspection_url = "\(server.issuer)/introspect/"
            client_id = "usher-password"
            client_secret_file = "\(secrets)/password.secret"
            accepted_client_ids = ["usher-code"]
            """
    }

    @Test func opaqueAccessTokensLogInAndInactiveOnesAreRefused() async throws {
        let server = try Self.server()
        try await DaemonProcess.with(config: Self.accessTokenConfig(server)) { daemon in
            let client = try daemon.connect()
            // A program holds an access token of the outside provider (here: from a login at it).
            _ = try await Self.passwordLogin(client, "heidi")
            let token = try #require(try await client.result("access_token")["access_token"]?.stringValue)
            #expect(token.split(separator: ".").count != 3, "the test server's access tokens are opaque")

            func login(_ issuer: String, _ token: String) async throws -> [String: JSONValue] {
                try await client.call(
                    "login",
                    [
                        "provider": "local",
                        "credentials": ["type": "access_token", "issuer": .string(issuer), "token": .string(token)],
                    ]
                )
            }

            // Introspection: the subject is the answer's username.
            let introspected = try await login("dot", token)
            let user = try #require(introspected["result"]?["user"])
            #expect(user["kind"] == "access_token")
            #expect(user["provider"] == "local")
            #expect(user["id"]?.stringValue == User.id(provider: "local", subject: "access_token:dot:heidi"))
            #expect(user["custom_data"]?["scope"]?.stringValue?.contains("openid") == true)
            // The same token again (and so the same person): the same user.
            #expect(try await login("dot", token)["result"]?["user"]?["id"] == user["id"])

            // Userinfo: the subject and email are the fields the section names.
            let userinfo = try await login("dotinfo", token)
            let viaUserinfo = try #require(userinfo["result"]?["user"])
            #expect(viaUserinfo["id"]?.stringValue == User.id(provider: "local", subject: "access_token:dotinfo:heidi"))
            #expect(viaUserinfo["email"] == "heidi@example.com")
            #expect(viaUserinfo["profile"]?["name"] == "Heidi Tester")

            // A token issued to a client the section does not accept.
            #expect(try await login("strict", token)["error"]?["code"] == "invalid_credentials")
            // A token the issuer never issued.
            #expect(
                try await login("dot", "not-a-token-\(UUID().uuidString)")["error"]?["code"] == "invalid_credentials"
            )
            #expect(try await login("dotinfo", "not-a-token")["error"]?["code"] == "invalid_credentials")
            // An issuer that is not configured.
            #expect(try await login("nobody", token)["error"]?["code"] == "unsupported_credentials")

            // Expired at the provider: refused both ways.
            try await server.expireAccessTokens(of: "heidi")
            #expect(try await login("dot", token)["error"]?["code"] == "invalid_credentials")
            #expect(try await login("dotinfo", token)["error"]?["code"] == "invalid_credentials")

            // Revoked at the provider: refused. olivia, whom no other suite logs in as: every token of hers is revoked,
            // and the suites share the server and run in parallel.
            _ = try await Self.passwordLogin(client, "olivia")
            let ivans = try #require(try await client.result("access_token")["access_token"]?.stringValue)
            #expect(try await login("dot", ivans)["result"]?["user"]?["kind"] == "access_token")
            try await server.revokeTokens(of: "olivia")
            #expect(try await login("dot", ivans)["error"]?["code"] == "invalid_credentials")

            // The token is never stored or logged.
            #expect(!daemon.log.contains(token))
            #expect(!daemon.log.contains(ivans))
        }
    }
}
