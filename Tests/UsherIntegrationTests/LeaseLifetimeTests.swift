import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// A lease lives as long as its connection: the idle timeout does not end it, and `usher inhibit` says so when it
/// is lost anyway.
extension LeasesIntegrationTests {
    @Test func aConnectionThatHoldsALeaseIsNotIdle() async throws {
        try await DaemonProcess.with(config: "[limits]\nidle_timeout = \"1s\"\n") { daemon in
            let holder = try daemon.connect()
            let lease = try await holder.result("inhibit", ["mode": "block", "who": "pay", "why": "card payment"])
            // A connection that holds nothing, idle from later on than the holder: once it is closed for being idle,
            // the holder's idle time has passed too.
            let idle = try daemon.connect()
            _ = try await idle.result("hello")
            idle.timeout = .seconds(120)
            #expect(try await idle.readLine() == nil)
            let leases = try await holder.result("list_leases")["leases"]?.arrayValue
            #expect(leases?.map { $0["lease"] } == [lease["lease"]])
        }
    }

    @Test func usherInhibitSaysSoWhenItsLeaseIsLost() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            _ = try await client.result("login", ["credentials": ["type": "anonymous"]])
            // The command forces the seat's user out through the lease it runs under, and then succeeds.
            let forcedLogout =
                #"echo '{"method":"logout","params":{"force":true}}' | socat - "UNIX-CONNECT:$USHER_SOCKET""#
            let run = try await CLITests.usher(
                daemon,
                ["inhibit", "--why", "card payment", "--", "/bin/sh", "-c", forcedLogout]
            )
            #expect(run.status == 1, "\(run.stderr)")
            #expect(run.stderr.contains("was lost"), "\(run.stderr)")
            #expect(run.stderr.contains("broken (forced)"), "\(run.stderr)")
            // A command that fails keeps its own status.
            _ = try await client.result("login", ["credentials": ["type": "anonymous"]])
            let failing = try await CLITests.usher(
                daemon,
                ["inhibit", "--why", "x", "--", "/bin/sh", "-c", forcedLogout + "; exit 3"]
            )
            #expect(failing.status == 3, "\(failing.stderr)")
            #expect(failing.stderr.contains("was lost"), "\(failing.stderr)")
            // A lease nothing broke: no word about it.
            let quiet = try await CLITests.usher(daemon, ["inhibit", "--why", "x", "--", "/bin/true"])
            #expect(quiet.status == 0, "\(quiet.stderr)")
            #expect(!quiet.stderr.contains("lost"))
        }
    }
}

extension LeasesIntegrationTests {
    /// A switch usherd has read is carried out even when its asker leaves while it waits for a delay lease (issue
    /// 42: only the answer is dropped), and audited with its real outcome and `client_gone=true`.
    @Test func aSwitchWhoseConnectionClosesWhileItWaitsHappensOnceTheLeaseGoes() async throws {
        try await DaemonProcess.with(config: "[leases]\nmax_delay = \"60s\"\n") { daemon in
            let root = try daemon.connect()
            for email in ["b@example.com", "c@example.com"] {
                _ = try await root.result("register", ["email": .string(email), "password": "secret123"])
            }
            let x = try await root.result("login", ["credentials": ["type": "anonymous"]])
            let xID = try #require(x["user"]?["id"]?.stringValue)
            var ids: [String: String] = [:]
            for email in ["c@example.com", "b@example.com"] {
                let login = try await root.result(
                    "login",
                    ["credentials": ["type": "email_password", "email": .string(email), "password": "secret123"]]
                )
                ids[email] = try #require(login["user"]?["id"]?.stringValue)
            }
            let watcher = try daemon.connect()
            _ = try await watcher.result("subscribe", ["events": ["active_user_changed"]])
            let holder = try daemon.connect()
            _ = try await holder.result("inhibit", ["mode": "delay", "who": "pay", "why": "card payment"])

            // A program asks to switch to x, and goes away while the switch waits for the lease.
            let leaving = try daemon.connect()
            try leaving.send(#"{"id":1,"method":"switch_user","params":{"user_id":"\#(xID)"}}"#)
            #expect(try await holder.nextEvent()["event"] == "switch_pending")
            leaving.close()
            // The daemon has seen it leave: root, the watcher and the holder are all it serves.
            try await eventually { try await root.result("status")["connections"] == 3 }
            // The lease goes; the switch whose asker left happens.
            _ = try await holder.call("release", ["lease": "l_1"])
            let changed = try await watcher.nextEvent()
            #expect(changed["data"]?["previous_user_id"]?.stringValue == ids["b@example.com"])
            #expect(changed["data"]?["user_id"]?.stringValue == xID)
            try await eventually {
                daemon.log.split(separator: "\n").contains {
                    $0.contains("action=switch_user") && $0.contains("outcome=ok") && $0.contains("client_gone=true")
                }
            }
        }
    }
}
