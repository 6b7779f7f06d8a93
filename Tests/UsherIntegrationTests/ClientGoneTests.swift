import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// A request usherd has read in full is carried out to the end whether or not its client is still there, and audited
/// with its real outcome and `client_gone=true`; only the answer is dropped (issue 42). A client that sends its
/// request and closes at once (`socat` whose wait ran out, a script that exits) used to have its request cancelled
/// halfway: accounts never created, logins never made, and right passwords audited as `invalid_credentials`.
///
/// The points at which a client leaves are chosen by what the daemon has done, never by the clock: a login held by
/// the gated authentication function (`GatedHook`) keeps the connection's requests waiting while the client closes,
/// and the gate opens only once the daemon has noticed the close (its `status` counts the connection no more). So
/// the requests run with their client gone: the one the function holds (left while it runs), and every one queued
/// behind it (left before it started).
@Suite(.integrationHangGuard)
struct ClientGoneTests {
    static func config(gate: String) -> String {
        """
        [providers.local]
        type = "local"

        [providers.local.function]
        command = ["\(gate)"]
        timeout = "2m"
        max_concurrent = 4
        """
    }

    static func password(_ email: String, _ password: String = "secret123") -> JSONValue {
        ["type": "email_password", "email": .string(email), "password": .string(password)]
    }

    /// One request line.
    static func line(_ id: Int, _ method: String, _ params: [String: JSONValue]) throws -> String {
        let request: JSONValue = ["id": .int(Int64(id)), "method": .string(method), "params": .object(params)]
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(request), as: UTF8.self)
    }

    /// The daemon's audit records for `action` that say the client was gone.
    static func goneRecords(_ daemon: DaemonProcess, _ action: String) -> [Substring] {
        AuditRecordTests.auditLines(daemon, action: action).filter { $0.contains("client_gone=true") }
    }

    /// Waits until the daemon counts no connection but the one asking: it has seen the client leave.
    static func waitUntilClosed(_ daemon: DaemonProcess) async throws {
        let probe = try daemon.connect()
        defer { probe.close() }
        try await eventually { try await probe.result("status")["connections"] == 1 }
    }

    @Test func requestsWhoseClientLeftAreCarriedOutAndAuditedWithTheirRealOutcome() async throws {
        let directory = try TestDirectory()
        defer { directory.remove() }
        let gate = try GatedHook.install(in: directory)
        try await DaemonProcess.with(config: Self.config(gate: gate)) { daemon in
            let setup = try daemon.connect()
            _ = try await setup.result("register", ["email": "ann@example.com", "password": "secret123"])
            _ = try await setup.result("register", ["email": "bob@example.com", "password": "secret123"])
            let guest = try await setup.result("login", ["credentials": ["type": "anonymous"]])
            let guestID = try #require(guest["user"]?["id"]?.stringValue)
            setup.close()

            // One connection: a login the function holds, then requests queued behind it; then the client leaves.
            let client = try daemon.connect()
            let requests = [
                try Self.line(
                    1,
                    "login",
                    ["credentials": ["type": "function", "payload": ["user": "held"]]]
                ),
                try Self.line(2, "register", ["email": "new@example.com", "password": "secret123"]),
                try Self.line(3, "login", ["credentials": Self.password("ann@example.com")]),
                try Self.line(4, "login", ["credentials": Self.password("ann@example.com", "wrong-password")]),
                try Self.line(
                    5,
                    "link_credentials",
                    ["user_id": .string(guestID), "credentials": Self.password("bob@example.com")]
                ),
                try Self.line(6, "switch_user", ["user_id": .string(guestID)]),
            ]
            try client.send(requests.joined(separator: "\n"))
            try await GatedHook.waitUntilStarted(1, in: directory)
            client.close()
            try await Self.waitUntilClosed(daemon)
            try GatedHook.open(in: directory)

            // Every request was carried out: the audit records come last, after its change is committed.
            try await eventually { !Self.goneRecords(daemon, "switch_user").isEmpty }
            let check = try daemon.connect()
            let users = try await check.result("list_users")["users"]?.arrayValue ?? []
            let emails = Set(users.compactMap { $0["email"]?.stringValue })
            #expect(emails.contains("ann@example.com"), "the login of ann did not take effect: \(users)")
            #expect(users.contains { $0["kind"] == "function" }, "the held login did not take effect: \(users)")
            #expect(try await check.result("current_user")["user"]?["id"]?.stringValue == guestID)
            // The account registered exists: registering it again is refused.
            #expect(
                try await check.errorCode("register", ["email": "new@example.com", "password": "secret123"])
                    == "account_exists"
            )
            // The link was made: bob's password now logs in the guest.
            let bob = try await check.result("login", ["credentials": Self.password("bob@example.com")])
            #expect(bob["user"]?["id"]?.stringValue == guestID)

            // Audited with the real outcome, and that the client was gone.
            let logins = Self.goneRecords(daemon, "login")
            #expect(logins.filter { $0.contains("outcome=ok") }.count == 2, "\(logins)")
            #expect(logins.contains { $0.contains("outcome=invalid_credentials") }, "\(logins)")
            #expect(logins.allSatisfy { !$0.contains("outcome=internal") }, "\(logins)")
            for action in ["register", "link_credentials", "switch_user"] {
                let records = Self.goneRecords(daemon, action)
                #expect(records.count == 1 && records[0].contains("outcome=ok"), "\(action): \(records)")
            }
        }
    }

    /// The same on the Varlink socket: a call read in full is carried out after its client left.
    @Test func aVarlinkCallWhoseClientLeftIsCarriedOut() async throws {
        let directory = try TestDirectory()
        defer { directory.remove() }
        let gate = try GatedHook.install(in: directory)
        try await DaemonProcess.with(config: Self.config(gate: gate)) { daemon in
            let client = try LineConnection(path: daemon.varlinkPath)
            try client.sendVarlink(
                "io.usher.Session.Login",
                ["credentials": ["type": "function", "payload": ["user": "held"]]]
            )
            try client.sendVarlink("io.usher.Session.Register", ["email": "new@example.com", "password": "secret123"])
            try await GatedHook.waitUntilStarted(1, in: directory)
            client.close()
            try await Self.waitUntilClosed(daemon)
            try GatedHook.open(in: directory)

            try await eventually { !Self.goneRecords(daemon, "register").isEmpty }
            #expect(Self.goneRecords(daemon, "register").first?.contains("outcome=ok") == true)
            #expect(Self.goneRecords(daemon, "login").first?.contains("outcome=ok") == true)
            let check = try daemon.connect()
            #expect(
                try await check.errorCode("register", ["email": "new@example.com", "password": "secret123"])
                    == "account_exists"
            )
            let current = try await check.result("current_user")["user"]
            #expect(
                current?["kind"] == "function",
                "the held login did not take effect: \(String(describing: current))"
            )
        }
    }

    /// The report's case, as a client does it: ten registrations, each sent by a `socat` of its own that closes the
    /// connection as soon as its input ends (`-t 0`), at the real password-hashing cost, so that each is still being
    /// answered when its client leaves. Every account is created, and audited `ok` (one record per `socat`: each is
    /// another process).
    @Test func tenRegistrationsWhoseClientsCloseAtOnceAreAllMade() async throws {
        try await DaemonProcess.with(config: "[daemon]\npassword_hash_cost = 14\n") { daemon in
            for index in 0..<10 {
                let line = try Self.line(
                    1,
                    "register",
                    ["email": .string("user\(index)@example.com"), "password": "secret123"]
                )
                let sent = try await runProcess(
                    "/usr/bin/socat",
                    ["-t", "0", "-", "UNIX-CONNECT:" + daemon.socketPath],
                    stdin: line + "\n"
                )
                #expect(sent.status == 0, "\(sent.stderr)")
            }
            try await eventually { AuditRecordTests.auditLines(daemon, action: "register").count == 10 }
            let records = AuditRecordTests.auditLines(daemon, action: "register")
            #expect(records.allSatisfy { $0.contains("outcome=ok") }, "\(records)")
            let check = try daemon.connect()
            for index in 0..<10 {
                #expect(
                    try await check.errorCode(
                        "register",
                        ["email": .string("user\(index)@example.com"), "password": "secret123"]
                    ) == "account_exists",
                    "user\(index)@example.com was not registered"
                )
            }
        }
    }
}

extension OIDCIntegrationTests {
    /// A login that waits for a person at the provider (`login_wait`) is the one request that ends with its client
    /// (ClientGoneTests): leaving is how that client cancels it. It is audited as cancelled, not as an internal error.
    @Test func aLoginWaitEndsWithItsClient() async throws {
        let server = try Self.server()
        try await DaemonProcess.with(config: server.providers()) { daemon in
            let client = try daemon.connect()
            let begun = try await client.result("login_begin", ["provider": "device", "type": "device_code"])
            let loginID = try #require(begun["login_id"]?.stringValue, "\(begun)")
            try client.send(try ClientGoneTests.line(2, "login_wait", ["login_id": .string(loginID)]))
            client.close()
            try await eventually { !ClientGoneTests.goneRecords(daemon, "login_wait").isEmpty }
            let record = try #require(ClientGoneTests.goneRecords(daemon, "login_wait").first)
            #expect(record.contains("outcome=cancelled"), "\(record)")
        }
    }
}
