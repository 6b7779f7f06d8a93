import Foundation
import Testing
import UsherProtocol
import UsherStore
import UsherTestSupport

/// `link_credentials` and `delete_user` are one transaction each: killed with SIGKILL while they
/// run (or right after they were answered), the daemon comes back with each either done or not done, never half (issue 21). A half-done link would be an
/// identity that finds a user that does not list it (or the reverse); a half-done deletion, a user whose account is
/// gone or an account whose user is.
@Suite(.integrationHangGuard)
struct AccountCrashSafetyTests {
    static func credentials(_ email: String) -> JSONValue {
        ["type": "email_password", "email": .string(email), "password": "secret123"]
    }

    /// Sends one request line without waiting for its answer.
    static func send(_ connection: LineConnection, _ id: Int64, _ method: String, _ params: [String: JSONValue]) throws
    {
        let request: JSONValue = ["id": .int(id), "method": .string(method), "params": .object(params)]
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        try connection.send(String(decoding: try encoder.encode(request), as: UTF8.self))
    }

    @Test func aLinkOrADeletionIsNeverHalfDoneAfterSIGKILL() async throws {
        try await DaemonProcess.with(config: "[login_throttle]\nenabled = false\n") { daemon in
            var linksAcknowledged = 0
            var deletionsAcknowledged = 0
            for round in 0..<12 {
                let linkEmail = "link\(round)@example.com"
                let deleteEmail = "delete\(round)@example.com"
                let setup = try daemon.connect()
                setup.timeout = .seconds(60)
                for email in [linkEmail, deleteEmail] {
                    _ = try await setup.result("register", ["email": .string(email), "password": "secret123"])
                }
                let doomed = try await setup.result("login", ["credentials": Self.credentials(deleteEmail)])
                let doomedID = try #require(doomed["user"]?["id"]?.stringValue)
                let guest = try await setup.result("login", ["credentials": ["type": "anonymous"]])
                let guestID = try #require(guest["user"]?["id"]?.stringValue)

                // Both in flight at once, on two connections.
                let linker = try daemon.connect()
                let deleter = try daemon.connect()
                try Self.send(
                    linker,
                    1,
                    "link_credentials",
                    ["user_id": .string(guestID), "credentials": Self.credentials(linkEmail)]
                )
                try Self.send(deleter, 2, "delete_user", ["user_id": .string(doomedID)])
                // The kill comes at a point chosen by what the daemon has answered, never by the clock: while both
                // are in flight (right after sending), after one of them was acknowledged, or after both.
                var linked = false
                var deleted = false
                switch round % 3 {
                case 0:
                    // Whatever was answered by the moment of the kill is acknowledged too.
                    linked = try linker.pollObject()?["result"] != nil
                    deleted = try deleter.pollObject()?["result"] != nil
                case 1:
                    if round.isMultiple(of: 2) {
                        linked = try await linker.readObject()["result"] != nil
                        deleted = try deleter.pollObject()?["result"] != nil
                    } else {
                        deleted = try await deleter.readObject()["result"] != nil
                        linked = try linker.pollObject()?["result"] != nil
                    }
                default:
                    linked = try await linker.readObject()["result"] != nil
                    deleted = try await deleter.readObject()["result"] != nil
                    #expect(linked && deleted, "round \(round): the link or the deletion failed")
                }
                try await daemon.kill9()
                try await daemon.start()

                let check = try daemon.connect()
                check.timeout = .seconds(60)
                let users = try #require(try await check.result("list_users")["users"]?.arrayValue)

                // The link: the guest lists the email's identity exactly when the email logs the guest in.
                let guestNow = try #require(users.first { $0["id"]?.stringValue == guestID }, "the guest is gone")
                let listsEmail = (guestNow["identities"]?.arrayValue?.count ?? 0) == 2
                let login = try await check.result("login", ["credentials": Self.credentials(linkEmail)])
                let findsGuest = login["user"]?["id"]?.stringValue == guestID
                #expect(listsEmail == findsGuest, "round \(round): lists \(listsEmail), finds the guest \(findsGuest)")
                if linked {
                    linksAcknowledged += 1
                    #expect(findsGuest, "round \(round): an acknowledged link was lost")
                }

                // The deletion: the user is on the device exactly when its account still logs in.
                let present = users.contains { $0["id"]?.stringValue == doomedID }
                let again = try await check.call("login", ["credentials": Self.credentials(deleteEmail)])
                let accountLives = again["result"] != nil
                #expect(present == accountLives, "round \(round): user present \(present), account \(accountLives)")
                if accountLives { #expect(again["result"]?["user"]?["id"]?.stringValue == doomedID) }
                if deleted {
                    deletionsAcknowledged += 1
                    #expect(!present && !accountLives, "round \(round): an acknowledged deletion was lost")
                }
                for connection in [setup, linker, deleter, check] { connection.close() }
            }
            print("acknowledged before the kill: \(linksAcknowledged) links, \(deletionsAcknowledged) deletions of 12")
            try await daemon.kill9()
            let integrity = try await AppDatabase(path: "\(daemon.stateDirectory)/usher.sqlite").integrityCheck()
            #expect(integrity == "ok")
        }
    }
}
