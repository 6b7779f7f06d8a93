import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// `usher login --function-stdin`: the authentication function's payload (a one-time code, a password) never goes on
/// the command line, where `ps` shows it to every user.
@Suite(.integrationHangGuard)
struct FunctionPayloadCLITests {
    @Test func theCLIReadsTheFunctionPayloadFromStandardInputOnly() async throws {
        try await OutsideCredentialsTests.withOutsideWorld([]) { directory, server, deadURL in
            let config = OutsideCredentialsTests.config(directory, jwksURL: server.url("jwks.json"), deadURL: deadURL)
            try await DaemonProcess.with(config: config) { daemon in
                // A pretty-printed payload with a one-time code, on stdin: logged in.
                let payload = "{\n  \"mode\": \"accept\",\n  \"user\": \"kiosk\",\n  \"code\": \"918273\"\n}\n"
                let login = try await CLITests.usher(daemon, ["login", "--function-stdin"], stdin: payload)
                #expect(login.status == 0, "\(login.stderr)")
                #expect(login.stdout.contains("kiosk@example.com"))
                #expect(!login.stdout.contains("918273") && !login.stderr.contains("918273"))

                // On the command line (where ps shows it to everyone) it is refused before anything is sent.
                let argv = try await CLITests.usher(
                    daemon,
                    ["login", "--function", #"{"mode": "accept", "user": "argv", "code": "918273"}"#]
                )
                #expect(argv.status == 2)
                #expect(argv.stderr.contains("--function-stdin"), "\(argv.stderr)")
                #expect(!argv.stderr.contains("918273"))

                // Not a JSON object, or nothing at all: a clear error, nothing sent.
                for stdin in ["[1, 2]\n", "not json", ""] {
                    let bad = try await CLITests.usher(daemon, ["login", "--function-stdin"], stdin: stdin)
                    #expect(bad.status == 1, "\(stdin): \(bad.stderr)")
                    #expect(bad.stderr.contains("function payload"), "\(bad.stderr)")
                }
                let users = try await daemon.connect().result("list_users")["users"]?.arrayValue ?? []
                #expect(users.count == 1)
            }
        }
    }
}
