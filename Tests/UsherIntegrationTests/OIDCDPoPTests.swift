import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// `dpop = true` at a real DPoP-capable OpenID provider (idpyoidc, `TokenExchangeServer` in its DPoP mode): the
/// provider binds the session's tokens to the key usherd made for it, usherd follows its nonce, proves the key on
/// userinfo, and a resource server accepts usherd's proofs for those tokens and nothing else.
@Suite(.integrationHangGuard)
struct OIDCDPoPTests {
    static func config(_ server: TokenExchangeServer) -> String {
        OIDCTokenExchangeTests.config(server) + """

            redirect_uri = "http://127.0.0.1:8976/callback"
            scopes = ["openid", "email", "profile", "offline_access"]
            dpop = true
            """
    }

    /// Logs diana in with the authorization code flow; the provider authenticates everyone, so the browser's part is
    /// one GET of the authorization URL, whose redirect carries the code. (idpyoidc grants `offline_access`, and so a
    /// refresh token, only with `prompt=consent`, which the person's browser would add here.)
    static func logIn(_ client: LineConnection) async throws -> JSONValue {
        let begun = try await client.result("login_begin", ["type": "authorization_code"])
        let authorize = try #require(begun["authorize_url"]?.stringValue) + "&prompt=consent"
        let redirect = try await runProcess(
            "/usr/bin/curl",
            ["--silent", "--show-error", "--output", "/dev/null", "--write-out", "%{redirect_url}", authorize]
        )
        let items = URLComponents(string: redirect.stdout)?.queryItems ?? []
        let code = try #require(items.first { $0.name == "code" }?.value, "\(redirect.stdout) \(redirect.stderr)")
        let state = try #require(items.first { $0.name == "state" }?.value)
        return try await client.result(
            "login",
            [
                "credentials": [
                    "type": "authorization_code", "code": .string(code), "state": .string(state),
                    "code_verifier": try #require(begun["code_verifier"]),
                    "redirect_uri": try #require(begun["redirect_uri"]),
                ]
            ]
        )
    }

    static func count(_ line: String, in log: String) -> Int {
        log.split(separator: "\n").filter { $0 == line }.count
    }

    @Test func theProviderBindsTheTokensAndAResourceServerAcceptsOnlyTheDaemonsProofs() async throws {
        try await TokenExchangeServer.with(dpop: true) { server in
            try await DaemonProcess.with(config: Self.config(server)) { daemon in
                let client = try daemon.connect()
                let login = try await Self.logIn(client)
                #expect(login["user"]?["email"] == "diana@example.com")

                // The provider demanded its nonce, and usherd's second proof carried it.
                #expect(Self.count("dpop: nonce demanded", in: server.log) == 1, "\(server.log)")
                #expect(Self.count("dpop: token request with nonce", in: server.log) == 1)
                // Userinfo was asked with the bound token and a proof the server accepted.
                #expect(Self.count("dpop: userinfo proof accepted", in: server.log) == 1)
                #expect(!server.log.contains("dpop: userinfo proof refused"), "\(server.log)")

                let answer = try await client.result("access_token")
                #expect(answer["token_type"] == "DPoP")
                let token = try #require(answer["access_token"]?.stringValue)
                let claims = try DPoPTests.decodePart(token, 1)
                let jkt = try #require(claims["cnf"]?["jkt"]?.stringValue)
                let subject = try #require(claims["sub"]?.stringValue)

                let jwks = try await runProcess(
                    "/usr/bin/curl",
                    ["--silent", "--show-error", server.issuer + "/jwks.json"]
                )
                let resource = try await DPoPTests.ResourceServer(jwks: jwks.stdout)
                defer { resource.directory.remove() }
                let url = resource.base + "/files"
                let proof = try #require(
                    try await client.result("dpop_proof", ["htm": "GET", "htu": .string(url)])["proof"]?.stringValue
                )
                #expect(try DPoPTests.thumbprint(ofProof: proof) == jkt)
                let accepted = try await DPoPTests.curl(url, ["Authorization: DPoP \(token)", "DPoP: \(proof)"])
                #expect(accepted.status == 200, "\(accepted.response)")
                let replayed = try await DPoPTests.curl(url, ["Authorization: DPoP \(token)", "DPoP: \(proof)"])
                let bare = try await DPoPTests.curl(url, ["Authorization: DPoP \(token)"])
                let foreign = DPoPTests.proofFromAnotherKey(url: url, accessToken: token)
                let stolen = try await DPoPTests.curl(url, ["Authorization: DPoP \(token)", "DPoP: \(foreign)"])
                #expect([replayed.status, bare.status, stolen.status] == [Int](repeating: 401, count: 3))
                #expect(
                    resource.verdicts == [
                        "accepted \(subject)", "refused: jti replayed", "refused: not exactly one DPoP proof",
                        "refused: the proof's key is not the one the token is bound to",
                    ]
                )

                // A refresh proves the same key: the new token is bound to it, and works with a new proof.
                _ = try await client.result("refresh")
                let refreshed = try await client.result("access_token")
                #expect(refreshed["token_type"] == "DPoP")
                let newToken = try #require(refreshed["access_token"]?.stringValue)
                #expect(newToken != token)
                #expect(try DPoPTests.decodePart(newToken, 1)["cnf"]?["jkt"]?.stringValue == jkt)
                let again = try #require(
                    try await client.result("dpop_proof", ["htm": "GET", "htu": .string(url)])["proof"]?.stringValue
                )
                #expect(
                    try await DPoPTests.curl(url, ["Authorization: DPoP \(newToken)", "DPoP: \(again)"]).status == 200
                )

                // refresh_profile reads userinfo again, with a proof for the new token.
                _ = try await client.result("refresh_profile")
                #expect(Self.count("dpop: userinfo proof accepted", in: server.log) == 2, "\(server.log)")
                #expect(!daemon.log.contains(token) && !daemon.log.contains(proof))
            }
        }
    }
}
