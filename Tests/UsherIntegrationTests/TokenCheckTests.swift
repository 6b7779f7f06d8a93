import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// What an outside issuer's answer about an opaque access token must hold before it logs anyone in (issue 36): an
/// `exp` that is a number, an answer from the endpoint that saw the token (not one it redirected to), and URL claims
/// that are web URLs. Against Tests/Fixtures/token-servers/token_check_server.py, whose answers the test writes.
@Suite(.integrationHangGuard)
struct TokenCheckTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/token-servers/token_check_server.py").path

    /// The issuer, and a daemon whose local provider takes its tokens by introspection and by userinfo, directly and
    /// through the endpoints that redirect.
    static func withIssuer(
        _ body: (_ daemon: DaemonProcess, _ directory: TestDirectory, _ server: BackgroundProcess) async throws -> Void
    ) async throws {
        let directory = try TestDirectory()
        defer { directory.remove() }
        let server = try BackgroundProcess(TestPython.executable, [Self.fixture, directory.path])
        let listening = try await server.stderrLine(within: .seconds(90)) { $0.hasPrefix("listening on ") }
        let url = String(listening.dropFirst("listening on ".count))
        try directory.write("secret", "issuer secret\n")
        let config = """
            [providers.local]
            type = "local"

            [providers.local.access_token.api]
            introspection_url = "\(url)/introspect"
            client_id = "usher"
            client_secret_file = "\(directory.file("secret"))"

            [providers.local.access_token.info]
            userinfo_url = "\(url)/userinfo"

            [providers.local.access_token.movedinfo]
            userinfo_url = "\(url)/moved/userinfo"

            [providers.local.access_token.moved]
            introspection_url = "\(url)/moved/introspect"
            client_id = "usher"
            client_secret_file = "\(directory.file("secret"))"
            """
        try await DaemonProcess.with(config: config) { daemon in try await body(daemon, directory, server) }
    }

    static func login(_ client: LineConnection, _ issuer: String, _ token: String) async throws -> [String: JSONValue] {
        try await client.call(
            "login",
            ["credentials": ["type": "access_token", "issuer": .string(issuer), "token": .string(token)]]
        )
    }

    static var now: Double { Date().timeIntervalSince1970 }

    /// Issue 36 item 9: an `exp` in the past refuses the token whatever its JSON type, and one that is not a number
    /// (which cannot be checked) refuses it too; a float in the future is a valid time.
    @Test func anExpThatIsNotANumberOrInThePastRefusesTheToken() async throws {
        try await Self.withIssuer { daemon, directory, _ in
            let client = try daemon.connect()
            let answers: [(String, JSONValue?, Bool)] = [
                ("intpast", .int(Int64(Self.now) - 3600), false),
                ("floatpast", .double(Self.now - 3600.5), false),
                ("stringpast", .string(String(Int64(Self.now) - 3600)), false),
                ("nullexp", .null, false),
                ("boolexp", .bool(true), false),
                ("floatfuture", .double(Self.now + 3600.5), true),
                ("intfuture", .int(Int64(Self.now) + 3600), true),
                ("noexp", nil, true),
            ]
            for (token, exp, _) in answers {
                var answer: [String: JSONValue] = ["active": true, "sub": .string("sub-\(token)")]
                if let exp { answer["exp"] = exp }
                try directory.write("\(token).json", String(decoding: try JSONEncoder().encode(answer), as: UTF8.self))
            }
            for (token, exp, accepted) in answers {
                let response = try await Self.login(client, "api", token)
                if accepted {
                    #expect(response["result"]?["user"]?["kind"] == "access_token", "\(token): \(response)")
                } else {
                    #expect(response["result"] == nil, "exp \(String(describing: exp)) logged in: \(response)")
                    #expect(response["error"]?["code"] != nil)
                }
            }
        }
    }

    /// Issue 36 item 10: a token-checking endpoint that redirects proves nothing, for userinfo (a GET, which other
    /// requests follow) as for introspection.
    @Test func aTokenCheckThatIsRedirectedProvesNothing() async throws {
        try await Self.withIssuer { daemon, directory, server in
            let client = try daemon.connect()
            try directory.write("good.json", #"{"active": true, "sub": "ann"}"#)
            // The endpoints themselves accept the token.
            #expect(try await Self.login(client, "info", "good")["result"]?["user"]?["kind"] == "access_token")
            #expect(try await Self.login(client, "api", "good")["result"]?["user"]?["kind"] == "access_token")
            for issuer in ["movedinfo", "moved"] {
                let response = try await Self.login(client, issuer, "good")
                #expect(response["result"] == nil, "\(issuer): a redirected check logged in: \(response)")
                #expect(response["error"]?["code"] != nil)
            }
            #expect(!server.stderr.contains("/open/"), "the redirect was followed: \(server.stderr)")
            #expect(!daemon.log.contains("mallory"))
        }
    }

    /// Issue 36 item 11 (from a provider): URL claims other than web URLs, and strings that show nothing, are left out
    /// of the profile; web URLs are kept.
    @Test func urlClaimsOfOtherSchemesAreLeftOut() async throws {
        try await Self.withIssuer { daemon, directory, _ in
            let client = try daemon.connect()
            let answer: JSONValue = [
                "sub": "carol", "email": "carol@example.com", "name": "Carol",
                "picture": "javascript:alert(document.cookie)", "website": "file:///etc/shadow",
                "profile": #"https://example.com/"><img src=x onerror=alert(1)>"#,
                "nickname": "\u{200B}\u{200D}", "given_name": "Carol",
            ]
            try directory.write("carol.json", String(decoding: try JSONEncoder().encode(answer), as: UTF8.self))
            let profile = try await Self.login(client, "info", "carol")["result"]?["user"]?["profile"]
            #expect(profile?["given_name"] == "Carol")
            for claim in ["picture", "website", "profile", "nickname"] {
                #expect(profile?[claim] == nil, "\(claim): \(String(describing: profile))")
            }

            let fine: JSONValue = [
                "sub": "dave", "picture": "https://cdn.example.com/dave.png?s=64",
                "website": "http://dave.example.com/", "profile": "https://example.com/~dave",
            ]
            try directory.write("dave.json", String(decoding: try JSONEncoder().encode(fine), as: UTF8.self))
            let kept = try await Self.login(client, "info", "dave")["result"]?["user"]?["profile"]
            #expect(kept?["picture"] == "https://cdn.example.com/dave.png?s=64")
            #expect(kept?["website"] == "http://dave.example.com/")
            #expect(kept?["profile"] == "https://example.com/~dave")
        }
    }
}
