import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// Linking and deleting with OpenID Connect, against the real test server (issue 21): the kiosk case of an anonymous
/// guest who signs in with the organisation's account, and `delete_user` at a provider with and without an
/// account-deletion endpoint.
@Suite(.integrationHangGuard, .oidcServer)
struct OIDCAccountLifecycleTests {
    static func server() throws -> OIDCTestServer {
        try #require(OIDCTestServer.shared, "the suite's OpenID Connect server is not running")
    }

    /// The server's providers, a local one (the default), and `deleting`: the password client with the server's
    /// account-deletion endpoint.
    static func config(_ server: OIDCTestServer) -> String {
        let base = server.issuer.replacingOccurrences(of: "/o", with: "")
        return server.providers(defaultProvider: "local") + """

            [providers.local]
            type = "local"

            [providers.deleting]
            type = "oidc"
            issuer = "\(server.issuer)"
            client_id = "usher-password"
            client_secret_file = "\(server.directory.path)/password.secret"
            delete_account_url = "\(base)/account/delete"
            """
    }

    static func password(_ user: String) -> JSONValue {
        ["type": "password", "username": .string(user), "password": .string("\(user)-password")]
    }

    @Test func anAnonymousGuestLinksAnOpenIDConnectAccount() async throws {
        let server = try Self.server()
        try await DaemonProcess.with(config: Self.config(server)) { daemon in
            let client = try daemon.connect()
            let guest = try await client.result("login", ["credentials": ["type": "anonymous"]])
            let guestID = try #require(guest["user"]?["id"]?.stringValue)
            let guestToken = try #require(try await client.result("access_token")["access_token"]?.stringValue)

            let linked = try await client.result(
                "link_credentials",
                ["provider": "corp", "credentials": Self.password("carol")]
            )
            #expect(linked["user"]?["id"]?.stringValue == guestID)
            #expect(linked["user"]?["provider"] == "corp")
            #expect(linked["user"]?["email"] == "carol@example.com")
            let kinds = linked["user"]?["identities"]?.arrayValue?.compactMap { $0["provider"]?.stringValue }
            #expect(kinds == ["corp", "local"])

            // The session now belongs to the OpenID Connect identity: access_token is the provider's token.
            let token = try #require(try await client.result("access_token")["access_token"]?.stringValue)
            #expect(token != guestToken)
            #expect(try await server.tokens(of: "carol").access >= 1)
            // A refresh goes to the provider the session belongs to now.
            _ = try await client.result("refresh")
            #expect(try await server.tokens(of: "carol").refreshActive >= 1)

            // Logging in at the provider later finds the same user, even after it was logged out.
            _ = try await client.result("logout")
            let again = try await client.result("login", ["provider": "corp", "credentials": Self.password("carol")])
            #expect(again["user"]?["id"]?.stringValue == guestID)
            // The OpenID Connect identity is now taken: linking it to another user is refused.
            _ = try await client.result("login", ["credentials": ["type": "anonymous"]])
            #expect(
                try await client.errorCode(
                    "link_credentials",
                    ["provider": "corp", "credentials": Self.password("carol")]
                ) == "identity_in_use"
            )
        }
    }

    /// `usher link --device`: the device flow, finished by `login_wait` with `link_to`, links the provider's account
    /// to the guest instead of logging a new user in.
    @Test func theDeviceFlowLinksThroughLoginWaitWithLinkTo() async throws {
        let server = try Self.server()
        try await DaemonProcess.with(config: Self.config(server)) { daemon in
            let client = try daemon.connect()
            let guest = try await client.result("login", ["credentials": ["type": "anonymous"]])
            let guestID = try #require(guest["user"]?["id"]?.stringValue)
            let cli = try BackgroundProcess(
                try BuiltProducts.path(of: "usher"),
                ["--socket", daemon.socketPath, "link", "--provider", "device", "--device"]
            )
            let visit = try await cli.stderrLine { $0.hasPrefix("To log in, visit ") }
            let uri = try #require(visit.split(separator: " ").first { $0.hasPrefix("http") }).description
            let code = try await cli.stderrLine { line in
                line.count == 8 && line.allSatisfy { $0.isUppercase || $0.isNumber }
            }
            let browser = try await server.browser(["device", uri, code, "frank", "frank-password"])
            #expect(browser.status == 0, "\(browser.stderr)")
            #expect(try await cli.exitStatus() == 0, "\(cli.stderr)")
            let users = try #require(try await client.result("list_users")["users"]?.arrayValue)
            #expect(users.count == 1, "a link adds no user: \(users)")
            #expect(users.first?["id"]?.stringValue == guestID)
            #expect(users.first?["kind"] == "device_code")
            #expect(users.first?["email"] == "frank@example.com")
            #expect(users.first?["identities"]?.arrayValue?.count == 2)
        }
    }

    @Test func deletionNeedsAnAccountDeletionEndpoint() async throws {
        let server = try Self.server()
        try await DaemonProcess.with(config: Self.config(server)) { daemon in
            let client = try daemon.connect()
            let corp = try await client.result("login", ["provider": "corp", "credentials": Self.password("dave")])
            let daveID = try #require(corp["user"]?["id"]?.stringValue)
            let refused = try await client.call("delete_user", ["user_id": .string(daveID)])
            #expect(refused["error"]?["code"] == "not_supported")
            #expect(refused["error"]?["message"]?.stringValue?.contains("remove_user") == true)
            #expect(try await client.result("current_user")["user"]?["state"] == "logged_in")

            // mallory, not a user other suites log in as: the server is shared, and the suites run in parallel.
            let watcher = try daemon.connect()
            _ = try await watcher.result("subscribe", ["events": ["user_removed"]])
            let deleting = try await client.result(
                "login",
                ["provider": "deleting", "credentials": Self.password("mallory")]
            )
            let malloryID = try #require(deleting["user"]?["id"]?.stringValue)
            let deleted = try await client.result("delete_user", ["user_id": .string(malloryID)])
            #expect(deleted["user_id"]?.stringValue == malloryID)
            let event = try await watcher.nextEvent()
            #expect(event["data"]?["user_id"]?.stringValue == malloryID)
            #expect(event["data"]?["reason"] == "deleted")
            // Deleted at the provider: its password logs in nowhere any more, and its tokens are gone.
            let login = try await client.call(
                "login",
                ["provider": "deleting", "credentials": Self.password("mallory")]
            )
            #expect(login["error"]?["code"] == "invalid_credentials", "\(login)")
            #expect(try await server.tokens(of: "mallory").access == 0)
        }
    }
}
