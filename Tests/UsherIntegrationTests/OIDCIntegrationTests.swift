import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// OpenID Connect providers on the real daemon against a real OpenID Connect server (django-oauth-toolkit, see
/// `OIDCTestServer`): every login flow, refresh with rotation, revocation both ways, and a provider that goes away.
@Suite(.integrationHangGuard, .oidcServer)
struct OIDCIntegrationTests {
    static func server() throws -> OIDCTestServer {
        try #require(OIDCTestServer.shared, "the suite's OpenID Connect server is not running")
    }

    static func usher() throws -> String { try BuiltProducts.path(of: "usher") }

    /// The value of `name` in a URL's query.
    static func query(_ url: String, _ name: String) -> String? {
        URLComponents(string: url)?.queryItems?.first { $0.name == name }?.value
    }

    // MARK: - Authorization code + PKCE, through the CLI

    @Test func browserLoginThroughTheCLI() async throws {
        let server = try Self.server()
        try await DaemonProcess.with(config: server.providers()) { daemon in
            /// `usher login --provider code --no-browser`, with the scripted person at the browser.
            func login(as user: String, deny: Bool = false) async throws -> (status: Int32, BackgroundProcess) {
                let cli = try BackgroundProcess(
                    try Self.usher(),
                    ["--socket", daemon.socketPath, "login", "--provider", "code", "--no-browser"]
                )
                // The URL is printed alone on its own line on stderr.
                let url = try await cli.stderrLine { $0.hasPrefix("http") }
                #expect(url.hasPrefix(server.issuer + "/authorize/?"))
                #expect(Self.query(url, "code_challenge_method") == "S256")
                #expect(Self.query(url, "state") != nil)
                #expect(Self.query(url, "nonce") != nil)
                let redirect = try #require(Self.query(url, "redirect_uri"))
                #expect(redirect.hasPrefix("http://127.0.0.1:"))
                let browser = try await server.browser(
                    ["authorize", url, user, "\(user)-password"] + (deny ? ["--deny"] : [])
                )
                #expect(browser.status == 0, "\(browser.stderr)")
                // The CLI answered the browser.
                #expect(browser.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "200")
                return (try await cli.exitStatus(), cli)
            }

            let (status, first) = try await login(as: "alice")
            #expect(status == 0, "\(first.stderr)")
            #expect(first.stdout.contains("alice@example.com"))
            #expect(first.stdout.contains("Alice Tester"))
            #expect(first.stdout.contains("authorization_code"))

            let client = try daemon.connect()
            let current = try await client.result("current_user")
            let alice = try #require(current["user"]?["id"]?.stringValue)
            #expect(current["user"]?["provider"] == "code")
            #expect(current["user"]?["kind"] == "authorization_code")
            #expect(current["user"]?["email"] == "alice@example.com")
            #expect(current["user"]?["state"] == "logged_in")

            // The access token is the provider's, and works at its userinfo endpoint.
            let token = try #require(try await client.result("access_token")["access_token"]?.stringValue)
            let userinfo = try await server.browser(["userinfo", server.issuer + "/userinfo/", token])
            #expect(userinfo.stdout.hasPrefix("200"))
            #expect(userinfo.stdout.contains("alice@example.com"))

            // The same person again is the same user; another person is another user, and becomes active.
            #expect(try await login(as: "alice").status == 0)
            #expect(try await client.result("current_user")["user"]?["id"]?.stringValue == alice)
            #expect(try await login(as: "bob").status == 0)
            let users = try #require(try await client.result("list_users")["users"]?.arrayValue)
            #expect(users.count == 2)
            #expect(try await client.result("current_user")["user"]?["email"] == "bob@example.com")

            // A person who declines: the CLI fails, saying so; nobody is logged in.
            let (deniedStatus, denied) = try await login(as: "carol", deny: true)
            #expect(deniedStatus == 1)
            #expect(denied.stderr.contains("access_denied"))
            #expect(try #require(try await client.result("list_users")["users"]?.arrayValue).count == 2)

            // Nothing secret in the daemon's log (it runs at debug).
            #expect(!daemon.log.contains(token))
        }
    }

    @Test func stateAndPKCEAreCheckedAndNothingSecretIsLogged() async throws {
        let server = try Self.server()
        try await DaemonProcess.with(config: server.providers()) { daemon in
            let client = try daemon.connect()
            /// Starts a login and plays the browser: the redirect's code, with what login_begin returned.
            func begin(user: String = "judy") async throws -> (begun: JSONValue, code: String) {
                let begun = try await client.result("login_begin", ["provider": "code"])
                let url = try #require(begun["authorize_url"]?.stringValue)
                let browser = try await server.browser(["authorize", url, user, "\(user)-password", "--print-redirect"])
                #expect(browser.status == 0, "\(browser.stderr)")
                let redirect = browser.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                #expect(Self.query(redirect, "state") == begun["state"]?.stringValue)
                return (begun, try #require(Self.query(redirect, "code")))
            }
            func credentials(_ begun: JSONValue, _ code: String, _ changes: [String: JSONValue] = [:]) -> JSONValue {
                var credentials: [String: JSONValue] = [
                    "type": "authorization_code", "code": .string(code),
                    "code_verifier": begun["code_verifier"] ?? nil, "redirect_uri": begun["redirect_uri"] ?? nil,
                    "state": begun["state"] ?? nil,
                ]
                credentials.merge(changes) { _, new in new }
                return .object(credentials)
            }

            let (begun, code) = try await begin()
            #expect(begun["type"] == "authorization_code")
            #expect(begun["status"] == "pending")
            // A state the daemon did not issue is refused (and does not use up the real one).
            #expect(
                try await client.errorCode(
                    "login",
                    ["provider": "code", "credentials": credentials(begun, code, ["state": "forged"])]
                ) == "invalid_credentials"
            )
            let login = try await client.result("login", ["provider": "code", "credentials": credentials(begun, code)])
            #expect(login["user"]?["email"] == "judy@example.com")
            // Neither the state nor the code can be used twice.
            #expect(
                try await client.errorCode("login", ["provider": "code", "credentials": credentials(begun, code)])
                    == "invalid_credentials"
            )

            // A verifier that does not match the challenge is refused before the provider sees the code.
            let (other, otherCode) = try await begin()
            let verifier = String(repeating: "A", count: 43)
            #expect(
                try await client.errorCode(
                    "login",
                    [
                        "provider": "code",
                        "credentials": credentials(other, otherCode, ["code_verifier": .string(verifier)]),
                    ]
                ) == "invalid_credentials"
            )
            // A redirect that does not fit the configured one is refused at login_begin.
            #expect(
                try await client.errorCode(
                    "login_begin",
                    ["provider": "code", "redirect_uri": "http://127.0.0.1:8123/elsewhere"]
                ) == "invalid_params"
            )
            let explicit = try await client.result(
                "login_begin",
                ["provider": "code", "redirect_uri": "http://127.0.0.1:8123/callback"]
            )
            #expect(explicit["redirect_uri"] == "http://127.0.0.1:8123/callback")
            // A provider without interactive logins, and a type login_begin does not know.
            #expect(try await client.errorCode("login_begin", ["provider": "nope"]) == "provider_not_found")
            #expect(try await client.errorCode("login_begin", ["type": "password"]) == "invalid_params")

            let token = try #require(try await client.result("access_token")["access_token"]?.stringValue)
            let log = daemon.log
            for secret in [code, otherCode, token, begun["code_verifier"]?.stringValue ?? "-", "judy-password"] {
                #expect(!log.contains(secret))
            }
        }
    }

    // MARK: - Device flow

    @Test func deviceFlowThroughTheCLI() async throws {
        let server = try Self.server()
        try await DaemonProcess.with(config: server.providers()) { daemon in
            let cli = try BackgroundProcess(
                try Self.usher(),
                ["--socket", daemon.socketPath, "login", "--provider", "device", "--device"]
            )
            let visit = try await cli.stderrLine { $0.hasPrefix("To log in, visit ") }
            let uri = try #require(visit.split(separator: " ").first { $0.hasPrefix("http") }).description
            #expect(uri == server.issuer + "/device/")
            let code = try await cli.stderrLine { line in
                line.count == 8 && line.allSatisfy { $0.isUppercase || $0.isNumber }
            }
            let browser = try await server.browser(["device", uri, code, "carol", "carol-password"])
            #expect(browser.status == 0, "\(browser.stderr)")
            #expect(try await cli.exitStatus() == 0, "\(cli.stderr)")
            #expect(cli.stdout.contains("carol@example.com"))
            #expect(cli.stdout.contains("device_code"))

            // Declined at the provider: login_wait says access_denied.
            let client = try daemon.connect()
            client.timeout = hangGuard
            let begun = try await client.result("login_begin", ["provider": "device", "type": "device_code"])
            let loginID = try #require(begun["login_id"]?.stringValue)
            #expect(begun["status"] == "pending")
            #expect(begun["expires_at"]?.stringValue != nil)
            let userCode = try #require(begun["user_code"]?.stringValue)
            let verification = try #require(begun["verification_uri"]?.stringValue)
            let denied = try await server.browser(["device", verification, userCode, "ivan", "ivan-password", "--deny"])
            #expect(denied.status == 0, "\(denied.stderr)")
            #expect(try await client.errorCode("login_wait", ["login_id": .string(loginID)]) == "access_denied")
            #expect(try await client.errorCode("login_wait", ["login_id": "device.unknown"]) == "expired_token")
            #expect(try await client.errorCode("login_wait", ["login_id": "nonsense"]) == "expired_token")

            let users = try #require(try await client.result("list_users")["users"]?.arrayValue)
            #expect(users.count == 1)
            #expect(users.first?["kind"] == "device_code")
        }
    }

    // MARK: - Password and client credentials

    @Test func passwordAndClientCredentialsGrants() async throws {
        let server = try Self.server()
        try await DaemonProcess.with(config: server.providers()) { daemon in
            let usher = try Self.usher()
            let login = try await runProcess(
                usher,
                [
                    "--socket", daemon.socketPath, "login", "--provider", "corp", "--username", "dave",
                    "--password-stdin",
                ],
                stdin: "dave-password\n"
            )
            #expect(login.status == 0, "\(login.stderr)")
            #expect(login.stdout.contains("dave@example.com"))
            #expect(login.stdout.contains("password"))
            let wrong = try await runProcess(
                usher,
                [
                    "--socket", daemon.socketPath, "login", "--provider", "corp", "--username", "dave",
                    "--password-stdin",
                ],
                stdin: "not-the-password\n"
            )
            #expect(wrong.status == 1)
            #expect(wrong.stderr.contains("invalid_credentials"))

            // The service account: a user for the client itself, renewed with new grants.
            let client = try daemon.connect()
            let service = try await client.result(
                "login",
                ["provider": "service", "credentials": ["type": "client_credentials"]]
            )
            #expect(service["user"]?["kind"] == "client_credentials")
            #expect(service["user"]?["name"] == "usher-service")
            #expect(service["user"]?["email"] == .null)
            let serviceID = try #require(service["user"]?["id"]?.stringValue)
            let first = try #require(try await client.result("access_token")["access_token"]?.stringValue)
            let refreshed = try await client.result("refresh", ["user_id": .string(serviceID)])
            #expect(refreshed["user_id"]?.stringValue == serviceID)
            let second = try #require(try await client.result("access_token")["access_token"]?.stringValue)
            #expect(first != second)
            // Logging in again keeps the same user.
            let again = try await client.result(
                "login",
                ["provider": "service", "credentials": ["type": "client_credentials"]]
            )
            #expect(again["user"]?["id"]?.stringValue == serviceID)
            // A client that may only use the password grant has no service account.
            #expect(
                try await client.errorCode("login", ["credentials": ["type": "client_credentials"]]) == "provider_error"
            )

            // The credential types come from discovery: django-oauth-toolkit has no token exchange.
            let providers = try #require(try await client.result("providers")["providers"]?.arrayValue)
            let byName = Dictionary(uniqueKeysWithValues: providers.map { ($0["name"]?.stringValue ?? "", $0) })
            let corpCredentials = try #require(byName["corp"]?["credentials"]?.arrayValue)
            let corp = corpCredentials.compactMap { $0.stringValue }
            #expect(corp.contains("password"))
            #expect(corp.contains("client_credentials"))
            #expect(!corp.contains("token_exchange"))
            #expect(byName["code"]?["credentials"]?.arrayValue?.contains("client_credentials") == false)
            #expect(byName["corp"]?["type"] == "oidc")
            #expect(!daemon.log.contains("dave-password"))
            #expect(!daemon.log.contains("password-secret"))
        }
    }

    // MARK: - Refresh, rotation, revocation

    @Test func refreshRotatesAndARevocationAtTheServerLogsTheUserOut() async throws {
        let server = try Self.server()
        try await DaemonProcess.with(config: server.providers()) { daemon in
            let watcher = try daemon.connect()
            _ = try await watcher.result("subscribe", ["events": ["token_refreshed", "user_logged_out"]])
            let client = try daemon.connect()
            let login = try await client.result(
                "login",
                [
                    "provider": "short",
                    "credentials": ["type": "password", "username": "erin", "password": "erin-password"],
                ]
            )
            let erin = try #require(login["user"]?["id"]?.stringValue)
            let firstToken = try #require(try await client.result("access_token")["access_token"]?.stringValue)

            // Access tokens live 4 s: refreshed about 2 s before they expire, without any request, twice.
            for _ in 0..<2 {
                let event = try await watcher.nextEvent()
                #expect(event["event"] == "token_refreshed")
                #expect(event["data"]?["user_id"]?.stringValue == erin)
            }
            let current = try #require(try await client.result("access_token")["access_token"]?.stringValue)
            #expect(current != firstToken)
            // Rotation at the server: every refresh token used is revoked; one is active.
            let tokens = try await server.tokens(of: "erin")
            #expect(tokens.refreshActive == 1)
            #expect(tokens.refreshRevoked >= 2)

            // An administrator revokes the session at the provider: the next refresh ends it here. A refresh that was
            // already at the server when the revocation ran got a refresh token the revocation did not see; the
            // administrator revokes again each time one shows up (without this, the wait below would go on forever).
            try await server.revokeTokens(of: "erin")
            var loggedOut: JSONValue?
            while loggedOut == nil {
                let event = try await watcher.nextEvent()
                if event["event"] == "user_logged_out" { loggedOut = .object(event) }
                if event["event"] == "token_refreshed" { try await server.revokeTokens(of: "erin") }
            }
            #expect(loggedOut?["data"]?["user_id"]?.stringValue == erin)
            #expect(loggedOut?["data"]?["reason"] == "session_revoked")
            let users = try #require(try await client.result("list_users")["users"]?.arrayValue)
            #expect(users.first?["state"] == "logged_out")
            #expect(users.first?["token_state"] == "none")
            #expect(try await client.errorCode("access_token", ["user_id": .string(erin)]) == "user_logged_out")
            #expect(!daemon.log.contains(current))
        }
    }

    @Test func logoutRevokesTheTokensAtTheProvider() async throws {
        let server = try Self.server()
        try await DaemonProcess.with(config: server.providers()) { daemon in
            let client = try daemon.connect()
            _ = try await client.result(
                "login",
                ["credentials": ["type": "password", "username": "frank", "password": "frank-password"]]
            )
            let token = try #require(try await client.result("access_token")["access_token"]?.stringValue)
            let before = try await server.tokens(of: "frank")
            #expect(before.refreshActive == 1)
            #expect(before.access == 1)

            let logout = try await client.result("logout")
            #expect(logout["revoked"] == true)
            #expect(logout["user"]?["state"] == "logged_out")
            let after = try await server.tokens(of: "frank")
            #expect(after.refreshActive == 0)
            #expect(after.refreshRevoked == 1)
            #expect(after.access == 0)
            // The provider no longer accepts the access token.
            let userinfo = try await server.browser(["userinfo", server.issuer + "/userinfo/", token])
            #expect(userinfo.stdout.hasPrefix("401") || userinfo.stdout.hasPrefix("403"))
            // Logging out a logged-out user changes nothing and revokes nothing.
            #expect(try await client.result("logout", ["user_id": logout["user"]?["id"] ?? nil])["revoked"] == false)
        }
    }

    @Test func theClientSecretIsReadFromTheCredentialsDirectory() async throws {
        let server = try Self.server()
        let credentials = try TestDirectory()
        defer { credentials.remove() }
        try credentials.write("usher-corp", "password-secret\n")
        let config = """
            [providers.corp]
            type = "oidc"
            issuer = "\(server.issuer)"
            client_id = "usher-password"
            client_secret_file = "usher-corp"
            [daemon]
            default_provider = "corp"
            """
        let daemon = try DaemonProcess(config: config)
        try await DaemonProcess.using(daemon) { daemon in
            var environment = ProcessInfo.processInfo.environment
            environment["CREDENTIALS_DIRECTORY"] = credentials.path
            try await daemon.start(environment: environment)
            let client = try daemon.connect()
            let login = try await client.result(
                "login",
                ["credentials": ["type": "password", "username": "grace", "password": "grace-password"]]
            )
            #expect(login["user"]?["email"] == "grace@example.com")
        }
    }

    /// The proxy variables in usherd's environment (libcurl's): requests to a provider go through the proxy
    /// `http_proxy` names, and not for a host `no_proxy` exempts.
    @Test func requestsToAProviderGoThroughTheProxyTheEnvironmentNames() async throws {
        let server = try Self.server()
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/proxy/forward_proxy.py").path
        let proxy = try BackgroundProcess(TestPython.executable, [fixture])
        let address = String(try await proxy.stderrLine { $0.hasPrefix("listening on ") }.dropFirst(13))
        var environment = ProcessInfo.processInfo.environment
        for name in ["http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"] {
            environment[name] = nil
        }
        environment["http_proxy"] = "http://\(address)"

        func logIn(_ environment: [String: String]) async throws {
            try await DaemonProcess.using(try DaemonProcess(config: server.providers())) { daemon in
                try await daemon.start(environment: environment)
                let client = try daemon.connect()
                defer { client.close() }
                let login = try await client.result(
                    "login",
                    ["credentials": ["type": "password", "username": "grace", "password": "grace-password"]]
                )
                #expect(login["user"]?["email"] == "grace@example.com", "\(login)")
            }
        }
        func proxied() -> [String] {
            proxy.stderr.split(separator: "\n").filter { $0.hasPrefix("proxied ") }.map(String.init)
        }

        try await logIn(environment)
        let discovery = "proxied GET \(server.issuer)/.well-known/openid-configuration"
        #expect(proxied().contains(discovery), "\(proxy.stderr)")
        #expect(proxied().contains { $0.hasPrefix("proxied POST \(server.issuer)/token") }, "\(proxy.stderr)")

        // Exempted: the same login, and nothing more through the proxy.
        let before = proxied()
        environment["no_proxy"] = "127.0.0.1"
        try await logIn(environment)
        #expect(proxied() == before, "\(proxy.stderr)")
    }
}
