import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// Token exchange (RFC 8693) against a real server that supports it (idpyoidc; see `TokenExchangeServer`).
@Suite(.integrationHangGuard)
struct OIDCTokenExchangeTests {
    /// The daemon's configuration for `server`: its one provider, `partner`, as the client `usher`.
    static func config(_ server: TokenExchangeServer) -> String {
        """
        [daemon]
        default_provider = "partner"
        [providers.partner]
        type = "oidc"
        issuer = "\(server.issuer)"
        client_id = "usher"
        client_secret_file = "\(server.directory.file("usher.secret"))"
        """
    }

    @Test func anotherApplicationsTokenIsExchangedForASession() async throws {
        try await TokenExchangeServer.with { server in
            try await DaemonProcess.with(config: Self.config(server)) { daemon in
                let client = try daemon.connect()
                let subjectToken = try await server.subjectToken()
                let login = try await client.result(
                    "login",
                    [
                        "credentials": [
                            "type": "token_exchange", "subject_token": .string(subjectToken),
                            "subject_token_type": "urn:ietf:params:oauth:token-type:access_token",
                        ]
                    ]
                )
                #expect(login["user"]?["kind"] == "token_exchange")
                #expect(login["user"]?["email"] == "diana@example.com")
                #expect(login["user"]?["name"] == "Diana Krall")
                // Discovery is done now: the credential types come from it. This server has no device flow and no
                // password grant.
                let providers = try #require(try await client.result("providers")["providers"]?.arrayValue)
                let credentials = providers.first?["credentials"]?.arrayValue?.compactMap { $0.stringValue } ?? []
                #expect(credentials.contains("token_exchange"))
                #expect(!credentials.contains("device_code"))
                #expect(!credentials.contains("password"))
                let diana = try #require(login["user"]?["id"]?.stringValue)
                // The session holds the token issued to usher, not the other application's.
                let token = try #require(try await client.result("access_token")["access_token"]?.stringValue)
                #expect(token != subjectToken)

                // Another of the application's tokens for the same person: the same user.
                let again = try await client.result(
                    "login",
                    [
                        "credentials": [
                            "type": "token_exchange", "subject_token": .string(try await server.subjectToken()),
                            "subject_token_type": "access_token",
                        ]
                    ]
                )
                #expect(again["user"]?["id"]?.stringValue == diana)

                // A subject token the server did not issue: its error, passed on.
                let refused = try await client.call(
                    "login",
                    [
                        "credentials": [
                            "type": "token_exchange", "subject_token": "not.a.token",
                            "subject_token_type": "access_token",
                        ]
                    ]
                )
                #expect(refused["error"]?["code"] == "provider_error")
                #expect(refused["error"]?["message"]?.stringValue?.contains("Subject token invalid") == true)
                #expect(!daemon.log.contains(subjectToken))
                #expect(!daemon.log.contains(token))
            }
        }
    }
}
