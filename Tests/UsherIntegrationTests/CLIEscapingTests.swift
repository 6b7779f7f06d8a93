import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// Text another uid controls never drives the terminal of whoever runs `usher`: lease fields from any program with
/// `token` permission, and (should a daemon ever send them) user, seat, provider and key names and event fields. An
/// escape sequence, a line break (which would forge a table row), a C1 control or a bidirectional override is shown
/// written out (`\u001b`, `\r\n`, `\u202e`), in tables, in lines and in `--json` output alike.
@Suite(.integrationHangGuard)
struct CLIEscapingTests {
    /// Clears the screen, starts a forged table row, reverses what follows, and sends a C1 CSI and a line separator.
    static let hostile = "\u{1B}[2J\u{1B}[Hx\r\nl_forged  seat0  block\u{202E}txt.exe\u{9B}31m\u{2028}end"

    /// Whether `text` holds no character that drives a terminal, except the line feeds that end its lines.
    static func isInert(_ text: String) -> Bool {
        !text.unicodeScalars.contains { scalar in
            scalar != "\n"
                && (scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar.value == 0x2028
                    || scalar.value == 0x2029 || scalar.value == 0x061C || (0x202A...0x202E).contains(scalar.value)
                    || (0x2066...0x2069).contains(scalar.value))
        }
    }

    static func lines(_ text: String) -> [Substring] { text.split(separator: "\n", omittingEmptySubsequences: false) }

    static func usher(socket: String, _ arguments: [String], stdin: String = "") async throws -> ProcessOutput {
        var environment = ProcessInfo.processInfo.environment
        environment["USHER_SOCKET"] = socket
        environment.removeValue(forKey: "NO_COLOR")
        return try await runProcess(
            try BuiltProducts.path(of: "usher"),
            arguments,
            stdin: stdin,
            environment: environment
        )
    }

    // MARK: - The real daemon: lease fields

    @Test func leasesShowWhoAndWhyEscaped() async throws {
        try await DaemonProcess.with { daemon in
            let holder = try daemon.connect()
            _ = try await holder.result(
                "inhibit",
                ["mode": "block", "who": .string(Self.hostile), "why": .string("why " + Self.hostile)]
            )
            let leases = try await Self.usher(socket: daemon.socketPath, ["leases"])
            #expect(leases.status == 0, "\(leases.stderr)")
            #expect(Self.isInert(leases.stdout), "\(leases.stdout.debugDescription)")
            // The header and the one lease: no forged row.
            #expect(Self.lines(leases.stdout).count == 3, "\(leases.stdout)")
            #expect(leases.stdout.contains(#"\u001b[2J\u001b[Hx\r\nl_forged"#), "\(leases.stdout)")
            #expect(leases.stdout.contains(#"\u202etxt.exe\u009b31m\u2028end"#), "\(leases.stdout)")
        }
    }

    @Test func jsonOutputWritesControlsInsideStringsAsEscapes() async throws {
        try await DaemonProcess.with { daemon in
            let holder = try daemon.connect()
            _ = try await holder.result(
                "inhibit",
                ["mode": "delay", "who": "w", "why": .string(Self.hostile)]
            )
            for arguments in [["--json", "leases"], ["call", "list_leases"]] {
                let output = try await Self.usher(socket: daemon.socketPath, arguments)
                #expect(output.status == 0, "\(output.stderr)")
                #expect(Self.isInert(output.stdout), "\(arguments): \(output.stdout.debugDescription)")
                #expect(Self.lines(output.stdout).count == 2, "one line: \(output.stdout.debugDescription)")
                // Still JSON, and the same text once decoded.
                let value = try JSONDecoder().decode(JSONValue.self, from: Data(output.stdout.utf8))
                #expect(value["leases"]?.arrayValue?.first?["why"]?.stringValue == Self.hostile)
            }
        }
    }

    // MARK: - A stand-in daemon: what the real one refuses to send

    static let user = UserInfo(
        id: "u_\u{1B}[1mid",
        provider: "p\u{1B}]0;title\u{07}",
        kind: "k\r\nforged",
        email: "\u{1B}[2Ja@example.com\u{202E}",
        name: "N\u{9B}ame",
        state: .loggedIn,
        active: true,
        createdAt: Timestamp(millisecondsSinceEpoch: 1_700_000_000_000),
        lastLoginAt: nil,
        lastActiveAt: nil,
        accessTokenExpiresAt: Timestamp(millisecondsSinceEpoch: 1_700_000_000_000),
        refreshTokenExpiresAt: nil,
        tokenState: .retrying,
        nextRefreshAt: nil,
        retryAt: Timestamp(millisecondsSinceEpoch: 1_700_000_000_000),
        lastRefreshError: ErrorCode("provider_\u{1B}[31m")
    )

    static let seat = "seat\u{1B}[2J\nforged"

    static func standIn() throws -> ScriptedDaemon {
        let at = Timestamp(millisecondsSinceEpoch: 1_700_000_000_000)
        return try ScriptedDaemon(
            answers: [
                "list_users": ListUsersRequest.Result(generation: 1, users: [Self.user]),
                "current_user": CurrentUserRequest.Result(generation: 1, seat: Self.seat, user: Self.user),
                "status": StatusRequest.Result(
                    version: "9\u{1B}[2J",
                    uptimeSeconds: 1,
                    generation: 1,
                    users: .init(loggedIn: 1, loggedOut: 0),
                    activeUserID: Self.user.id,
                    connections: 1,
                    refresh: .init(scheduled: 0, nextAt: nil, succeeded: 0, failed: 0)
                ),
                "list_seats": ListSeatsRequest.Result(
                    generation: 1,
                    defaultSeat: Self.seat,
                    seats: [SeatInfo(name: Self.seat, source: "logind\u{202E}", present: true, userID: Self.user.id)]
                ),
                "providers": ProvidersRequest.Result(providers: [
                    ProviderInfo(name: "p\u{1B}[2J", type: "t\r\nx", credentials: ["c\u{9B}"], default: true)
                ]),
                "list_leases": ListLeasesRequest.Result(leases: [
                    LeaseInfo(
                        lease: "l_\u{1B}[1m",
                        seat: Self.seat,
                        mode: .block,
                        who: Self.hostile,
                        why: Self.hostile,
                        pid: 1,
                        uid: 0,
                        executable: Self.hostile,
                        since: at
                    )
                ]),
                "register": RegisterRequest.Result(provider: "p\u{1B}[2J", email: "\u{1B}[2Ja@example.com"),
                "refresh": RefreshRequest.Result(userID: Self.user.id, accessTokenExpiresAt: at),
                "remove_user": RemoveUserRequest.Result(generation: 2, userID: Self.user.id),
                "list_api_keys": ListAPIKeysRequest.Result(
                    userID: Self.user.id,
                    apiKeys: [APIKeyInfo(name: "k\u{1B}[2J\nforged", createdAt: at)]
                ),
                "create_api_key": CreateAPIKeyRequest.Result(
                    userID: Self.user.id,
                    name: "k\u{1B}[2J",
                    key: "usher_key",
                    createdAt: at
                ),
                "delete_api_key": DeleteAPIKeyRequest.Result(userID: Self.user.id, name: "k\u{1B}[2J"),
                "subscribe": SubscribeRequest.Result(generation: 1, subscribed: EventName.subscribable),
            ],
            events: [
                Event(generation: 2, .userLoggedIn(user: Self.user)),
                Event(generation: 3, seat: Self.seat, .activeUserChanged(previousUserID: "u_\u{1B}[2J", userID: nil)),
                Event(generation: 4, .userRemoved(userID: "u_\u{1B}[2J\nforged")),
                Event(generation: 5, seat: Self.seat, .seatAdded(source: "logind\u{1B}[2J")),
                Event(generation: 6, seat: Self.seat, .seatRemoved),
                Event(generation: 7, seat: Self.seat, .leaseBroken(lease: "l_\u{1B}[2J", reason: "r\u{202E}")),
            ]
        )
    }

    @Test(arguments: [
        ["users"], ["users", "--long"], ["whoami"], ["status"], ["seats"], ["providers"], ["leases"],
        ["register", "--email", "a@example.com", "--password-stdin"], ["refresh"], ["remove", "u_x"],
        ["api-key", "list"], ["api-key", "create", "k"], ["api-key", "delete", "k"], ["watch"],
    ])
    func everyFieldADaemonSendsIsEscaped(arguments: [String]) async throws {
        let standIn = try Self.standIn()
        defer { standIn.stop() }
        let output = try await Self.usher(socket: standIn.socketPath, arguments, stdin: "secret123\n")
        #expect(output.status == 0, "\(arguments): \(output.stderr)")
        #expect(Self.isInert(output.stdout), "\(arguments): \(output.stdout.debugDescription)")
        #expect(Self.isInert(output.stderr), "\(arguments): \(output.stderr.debugDescription)")
        // The text is there, written out.
        #expect((output.stdout + output.stderr).contains(#"\u001b"#), "\(arguments): \(output.stdout.debugDescription)")
    }
}
