import Synchronization
import Testing
import UsherClient
import UsherTestSupport

// The Swift examples of docs/protocol.md, exactly as they are there (DocumentationTests checks that every line of
// theirs is here), compiled and run against the real daemon.

/// What the examples `print`, kept for the test to check instead of written among the test results, where the
/// expiry `printExpiry` prints stood as a stray number line (issue 42).
private let printed = Mutex<[String]>([])
private func print(_ item: Any) { printed.withLock { $0.append("\(item)") } }

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

func walkThrough(
    at location: SocketLocation = .resolve(),
    print: (String) -> Void = { Swift.print($0) }
) async throws {
    try await UsherClient.withConnection(to: location) { client in
        // Log in: an anonymous user, then an email/password account (the last login is the active user).
        let guest = try await client.login(.anonymous()).user
        do {
            _ = try await client.register(email: "ann@example.com", password: "correct horse")
        } catch let error as ResponseError where error.code == .accountExists {}
        let ann = try await client.login(.emailPassword(email: "ann@example.com", password: "correct horse")).user
        print("logged in: \(guest.id) (anonymous) and \(ann.id) (\(ann.email ?? ""))")

        // List users: * marks the active one.
        for user in try await client.listUsers().users {
            print("\(user.active ? "*" : " ") \(user.id) \(user.email ?? user.kind) \(user.state.rawValue)")
        }

        // Switch, and see the switch as an event (a subscription has a connection of its own).
        try await UsherClient.withConnection(to: location) { watcher in
            _ = try await watcher.subscribe(events: [.activeUserChanged])
            _ = try await client.switchUser(id: guest.id)
            for await event in watcher.events {
                if case .activeUserChanged(let previous, let current) = event.payload {
                    print("event active_user_changed: \(previous ?? "-") -> \(current ?? "-")")
                    break
                }
            }
        }

        // A token valid for at least five more minutes (usherd refreshes it first when needed).
        let token = try await client.accessToken(minValid: 300)
        print("token for \(token.userID): \(token.tokenType), valid for \(token.expiresIn) s")

        // Hold a lease: while it is held, nobody switches the active user (without force).
        let lease = try await client.inhibit(mode: .block, who: "walk-through", why: "card payment")
        print("lease \(lease.lease) holds seat \(lease.seat)")
        do {
            _ = try await client.switchUser(id: ann.id)
        } catch let refused as ResponseError {
            print("switch refused while the lease is held: \(refused.code.rawValue)")
        }
        _ = try await client.release(lease: lease.lease)
        print("after the lease: \(try await client.switchUser(id: ann.id).user.email ?? "") is active")
    }
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
            let expiry = printed.withLock { $0.last.flatMap { Int($0) } }
            #expect(expiry != nil && expiry! >= 300, "printExpiry printed \(printed.withLock { $0 })")
            let token = try currentToken(at: location)
            #expect(try await client.result("access_token")["access_token"]?.stringValue == token)
        }
    }

    @Test func theWalkThroughRunsAsDocumented() async throws {
        try await DaemonProcess.with { daemon in
            let location = SocketLocation(path: daemon.socketPath)
            var lines: [String] = []
            try await walkThrough(at: location) { lines.append($0) }
            let output = lines.joined(separator: "\n")
            let first = try #require(lines.first)
            let ids = first.split(separator: " ").filter { $0.hasPrefix("u_") }.map(String.init)
            try #require(ids.count == 2, "\(output)")
            let (guest, ann) = (ids[0], ids[1])
            #expect(first == "logged in: \(guest) (anonymous) and \(ann) (ann@example.com)")
            #expect(lines.contains("  \(guest) anonymous logged_in"))
            #expect(lines.contains("* \(ann) ann@example.com logged_in"))
            #expect(lines.contains("event active_user_changed: \(ann) -> \(guest)"))
            #expect(lines.contains { $0.hasPrefix("token for \(guest): Bearer, valid for ") })
            #expect(lines.contains("switch refused while the lease is held: inhibited"))
            #expect(lines.last == "after the lease: ann@example.com is active")
        }
    }
}
