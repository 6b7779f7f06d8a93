import Testing
import UsherClient
import UsherTestSupport

// The Swift examples of docs/protocol.md, exactly as they are there (DocumentationTests checks that every line of
// theirs is here), compiled and run against the real daemon.

func printExpiry(at location: SocketLocation = .resolve()) async throws {
    try await UsherClient.withConnection(to: location) { client in
        let token = try await client.accessToken(minValid: 300)
        print(token.expiresIn)
    }
}

func currentToken(at location: SocketLocation = .resolve()) throws -> String {
    let connection = try BlockingConnection(to: location)
    return try connection.send(AccessTokenRequest(minValid: 300)).accessToken
}

@Suite(.integrationHangGuard)
struct ClientExampleTests {
    @Test func theDocumentedExamplesWork() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            defer { client.close() }
            _ = try await client.result("login", ["credentials": ["type": "anonymous"]])
            let location = SocketLocation(path: daemon.socketPath)
            try await printExpiry(at: location)
            let token = try currentToken(at: location)
            #expect(try await client.result("access_token")["access_token"]?.stringValue == token)
        }
    }
}
