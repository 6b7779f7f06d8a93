import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// The CLI's flags for outside credentials.
extension OutsideCredentialsTests {
    @Test func loginFlagsOfTheCLI() async throws {
        let rsa = try TestIssuerKey.rsa(kid: "rsa-1")
        let corp = TestIssuerKey.p256(kid: "corp-1")
        try await Self.withOutsideWorld([rsa]) { directory, server, deadURL in
            try directory.write("corp.json", TestJWT.keySet([corp.publicJWK()]))
            let config = Self.config(directory, jwksURL: server.url("jwks.json"), deadURL: deadURL)
            try await DaemonProcess.with(config: config) { daemon in
                let token = try rsa.sign(Self.claims(["email": "cli@example.com"]))
                let jwt = try await CLITests.usher(daemon, ["login", "--jwt-stdin"], stdin: token + "\n")
                #expect(jwt.status == 0, "\(jwt.stderr)")
                #expect(jwt.stdout.contains("cli@example.com") && !jwt.stdout.contains(token))

                let idToken = try corp.sign([
                    "iss": .string(Self.corpIssuer), "aud": "usher-cli", "sub": "e-7", "email": "eve@corp.example",
                    "email_verified": true, "nonce": "abc", "exp": .int(Self.now + 600),
                ])
                let viaIDToken = try await CLITests.usher(
                    daemon,
                    ["login", "--id-token", "corp", "--token-stdin", "--nonce", "abc"],
                    stdin: idToken + "\n"
                )
                #expect(viaIDToken.status == 0, "\(viaIDToken.stderr)")
                #expect(viaIDToken.stdout.contains("eve@corp.example"))

                let function = try await CLITests.usher(
                    daemon,
                    ["login", "--function-stdin"],
                    stdin: #"{"mode": "accept", "user": "kiosk"}"#
                )
                #expect(function.status == 0, "\(function.stderr)")
                #expect(function.stdout.contains("kiosk@example.com"))

                // The daemon's refusals: exit 1 with the code.
                let refused = try await CLITests.usher(
                    daemon,
                    ["login", "--function-stdin"],
                    stdin: #"{"mode": "refuse"}"# + "\n"
                )
                #expect(refused.status == 1)
                #expect(refused.stderr.contains("invalid_credentials") && refused.stderr.contains("no such badge"))
                let expired = try await CLITests.usher(
                    daemon,
                    ["login", "--jwt-stdin"],
                    stdin: try rsa.sign(Self.claims(["exp": .int(Self.now - 3600)])) + "\n"
                )
                #expect(expired.status == 1)
                #expect(expired.stderr.contains("invalid_credentials") && expired.stderr.contains("expired"))

                // Usage errors: exit 2, nothing sent.
                let usage: [[String]] = [
                    ["login", "--jwt-stdin", "--anonymous"],
                    ["login", "--id-token", "corp"],
                    ["login", "--token-stdin"],
                    ["login", "--jwt-stdin", "--nonce", "abc"],
                    ["login", "--function", #"{"mode": "accept", "user": "argv"}"#],
                    ["login", "--function-stdin", "--id-token", "corp", "--token-stdin"],
                ]
                for arguments in usage {
                    let result = try await CLITests.usher(daemon, arguments, stdin: "x\n")
                    #expect(result.status == 2, "\(arguments): \(result.stderr)")
                }
                let users = try await daemon.connect().result("list_users")["users"]?.arrayValue ?? []
                #expect(users.count == 3)
            }
        }
    }
}
