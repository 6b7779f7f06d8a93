import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// `[unix_users]` on the real daemon: `io.systemd.UserDatabase` on its own socket, as `nss-systemd` and `userdbctl`
/// speak it (the tools themselves: `UnixUsersToolTests`), each user's uid and name allocated once and kept.
@Suite(.integrationHangGuard)
struct UnixUsersTests {
    static let config = """
        [unix_users]
        enabled = true
        uid_range = "60100-60199"
        shell = "/bin/zsh"
        home = "/home/%u"
        groups = ["audio", "video"]

        """

    static func userdbPath(_ daemon: DaemonProcess) -> String { daemon.directory.file("io.usher.Users") }

    /// Registers and logs in a local account; the user's id.
    static func logIn(_ client: LineConnection, _ email: String) async throws -> String {
        _ = try await client.result("register", ["email": .string(email), "password": "first secret"])
        let login = try await client.result(
            "login",
            ["credentials": ["type": "email_password", "email": .string(email), "password": "first secret"]]
        )
        return try #require(login["user"]?["id"]?.stringValue)
    }

    static func call(
        _ connection: LineConnection,
        _ method: String,
        _ parameters: [String: JSONValue] = [:],
        service: JSONValue? = "io.usher.Users"
    ) async throws -> [String: JSONValue] {
        var parameters = parameters
        if let service { parameters["service"] = service }
        return try await connection.varlink("io.systemd.UserDatabase." + method, parameters)
    }

    @Test func aLoggedInUserIsAUnixUserWithAStableUID() async throws {
        try await DaemonProcess.with(config: Self.config) { daemon in
            let client = try daemon.connect()
            _ = try await Self.logIn(client, "Alice.Smith@example.com")
            _ = try await Self.logIn(client, "alice.smith@example.org")
            let userdb = try LineConnection(path: Self.userdbPath(daemon))

            let alice = try await Self.call(userdb, "GetUserRecord", ["userName": "alice_smith"])
            #expect(alice["parameters"]?["incomplete"] == false)
            let record = try #require(alice["parameters"]?["record"])
            #expect(record["userName"] == "alice_smith")
            #expect(record["uid"] == 60100)
            #expect(record["gid"] == 60100)
            #expect(record["homeDirectory"] == "/home/alice_smith")
            #expect(record["shell"] == "/bin/zsh")
            #expect(record["memberOf"] == ["audio", "video"])
            #expect(record["disposition"] == "regular")
            #expect(record["service"] == "io.usher.Users")
            // The second account with the same local part gets the next free name and uid.
            let second = try await Self.call(userdb, "GetUserRecord", ["uid": 60101])
            #expect(second["parameters"]?["record"]?["userName"] == "alice_smith2")

            // Logged out: still a Unix user, with the same uid.
            _ = try await client.result("logout")
            let again = try await Self.call(userdb, "GetUserRecord", ["userName": "alice_smith2"])
            #expect(again["parameters"]?["record"]?["uid"] == 60101)

            // Across a restart, from the store.
            try await daemon.restart()
            let restarted = try LineConnection(path: Self.userdbPath(daemon))
            let kept = try await Self.call(restarted, "GetUserRecord", ["userName": "alice_smith"])
            #expect(kept["parameters"]?["record"]?["uid"] == 60100)
        }
    }

    @Test func lookupsAnswerAsTheInterfaceSays() async throws {
        try await DaemonProcess.with(config: Self.config) { daemon in
            let client = try daemon.connect()
            _ = try await Self.logIn(client, "bob@example.com")
            let userdb = try LineConnection(path: Self.userdbPath(daemon))

            #expect(
                try await Self.call(userdb, "GetUserRecord", ["userName": "nobody-here"])["error"]
                    == "io.systemd.UserDatabase.NoRecordFound"
            )
            #expect(
                try await Self.call(userdb, "GetUserRecord", ["uid": 4242])["error"]
                    == "io.systemd.UserDatabase.NoRecordFound"
            )
            // Name and uid of different (or no) users.
            #expect(
                try await Self.call(userdb, "GetUserRecord", ["userName": "bob", "uid": 60150])["error"]
                    == "io.systemd.UserDatabase.ConflictingRecordFound"
            )
            let both = try await Self.call(userdb, "GetUserRecord", ["userName": "bob", "uid": 60100])
            #expect(both["parameters"]?["record"]?["userName"] == "bob")
            // The secondary filters.
            #expect(
                try await Self.call(userdb, "GetUserRecord", ["userName": "bob", "uidMin": 60101])["error"]
                    == "io.systemd.UserDatabase.NonMatchingRecordFound"
            )
            // The service must be this one's.
            #expect(
                try await Self.call(userdb, "GetUserRecord", ["userName": "bob"], service: "io.systemd.Home")["error"]
                    == "io.systemd.UserDatabase.BadService"
            )
            #expect(
                try await Self.call(userdb, "GetUserRecord", ["userName": "bob"], service: nil)["error"]
                    == "io.systemd.UserDatabase.BadService"
            )
            // Bad parameters, and methods and interfaces this socket does not have.
            let wrongType = try await Self.call(userdb, "GetUserRecord", ["uid": "zero"])
            #expect(wrongType["error"] == "org.varlink.service.InvalidParameter")
            #expect(wrongType["parameters"]?["parameter"] == "uid")
            #expect(
                try await Self.call(userdb, "GetUserRecord", ["shoeSize": 44])["parameters"]?["parameter"]
                    == "shoeSize"
            )
            #expect(try await Self.call(userdb, "DeleteUser")["error"] == "org.varlink.service.MethodNotFound")
            #expect(
                try await userdb.varlink("io.usher.Session.CurrentUser")["error"]
                    == "org.varlink.service.InterfaceNotFound"
            )
            let info = try await userdb.varlink("org.varlink.service.GetInfo")
            #expect(info["parameters"]?["interfaces"] == ["org.varlink.service", "io.systemd.UserDatabase"])

            // The private group, gid = uid.
            let group = try await Self.call(userdb, "GetGroupRecord", ["gid": 60100])
            #expect(group["parameters"]?["record"]?["groupName"] == "bob")
            #expect(
                try await Self.call(userdb, "GetGroupRecord", ["groupName": "audio"])["error"]
                    == "io.systemd.UserDatabase.NoRecordFound"
            )

            // Memberships: the configured groups.
            let member = try await Self.call(userdb, "GetMemberships", ["userName": "bob", "groupName": "video"])
            #expect(member["parameters"] == ["userName": "bob", "groupName": "video"])
            #expect(
                try await Self.call(userdb, "GetMemberships", ["userName": "bob", "groupName": "disk"])["error"]
                    == "io.systemd.UserDatabase.NoRecordFound"
            )
            try userdb.sendVarlink(
                "io.systemd.UserDatabase.GetMemberships",
                ["userName": "bob", "service": "io.usher.Users"],
                more: true
            )
            let first = try #require(try await userdb.readVarlink())
            let last = try #require(try await userdb.readVarlink())
            #expect(first["continues"] == true && first["parameters"]?["groupName"] == "audio")
            #expect(last["continues"] == nil && last["parameters"]?["groupName"] == "video")
        }
    }

    @Test func enumerationStreamsEveryRecordWithMore() async throws {
        try await DaemonProcess.with(config: Self.config) { daemon in
            let userdb = try LineConnection(path: Self.userdbPath(daemon))
            // No users: NoRecordFound, and `more` is required to enumerate.
            try userdb.sendVarlink("io.systemd.UserDatabase.GetUserRecord", ["service": "io.usher.Users"], more: true)
            #expect(try await userdb.readVarlink()?["error"] == "io.systemd.UserDatabase.NoRecordFound")
            #expect(try await Self.call(userdb, "GetUserRecord")["error"] == "org.varlink.service.ExpectedMore")

            let client = try daemon.connect()
            for name in ["carol", "dave", "erin"] { _ = try await Self.logIn(client, "\(name)@example.com") }
            try userdb.sendVarlink("io.systemd.UserDatabase.GetUserRecord", ["service": "io.usher.Users"], more: true)
            var names: [JSONValue] = []
            while let reply = try await userdb.readVarlink() {
                names.append(reply["parameters"]?["record"]?["userName"] ?? .null)
                if reply["continues"] != true { break }
            }
            #expect(names == ["carol", "dave", "erin"])
            // Filtered: fuzzy names and a uid range.
            try userdb.sendVarlink(
                "io.systemd.UserDatabase.GetUserRecord",
                ["service": "io.usher.Users", "fuzzyNames": ["AV"], "uidMax": 60101],
                more: true
            )
            let fuzzy = try #require(try await userdb.readVarlink())
            #expect(fuzzy["continues"] == nil && fuzzy["parameters"]?["record"]?["userName"] == "dave")
        }
    }

    @Test func aRemovedUsersRecordGoesAndItsUIDStaysReserved() async throws {
        try await DaemonProcess.with(config: Self.config) { daemon in
            let client = try daemon.connect()
            let frank = try await Self.logIn(client, "frank@example.com")
            _ = try await client.result("remove_user", ["user_id": .string(frank)])
            let userdb = try LineConnection(path: Self.userdbPath(daemon))
            #expect(
                try await Self.call(userdb, "GetUserRecord", ["userName": "frank"])["error"]
                    == "io.systemd.UserDatabase.NoRecordFound"
            )
            #expect(
                try await Self.call(userdb, "GetUserRecord", ["uid": 60100])["error"]
                    == "io.systemd.UserDatabase.NoRecordFound"
            )
            // Another user does not get frank's uid, nor after a restart.
            _ = try await Self.logIn(client, "grace@example.com")
            try await daemon.restart()
            let restarted = try LineConnection(path: Self.userdbPath(daemon))
            let grace = try await Self.call(restarted, "GetUserRecord", ["userName": "grace"])
            #expect(grace["parameters"]?["record"]?["uid"] == 60101)
            // Frank back on the device: his own uid and name again.
            let again = try daemon.connect()
            _ = try await again.result(
                "login",
                ["credentials": ["type": "email_password", "email": "frank@example.com", "password": "first secret"]]
            )
            let back = try await Self.call(restarted, "GetUserRecord", ["uid": 60100])
            #expect(back["parameters"]?["record"]?["userName"] == "frank")
        }
    }

    @Test func usersFromBeforeTheFeatureGetAccountsWhenItIsTurnedOn() async throws {
        let daemon = try DaemonProcess(config: "")
        try await DaemonProcess.using(daemon) { daemon in
            try await daemon.start()
            let client = try daemon.connect()
            _ = try await Self.logIn(client, "heidi@example.com")
            #expect(!FileManager.default.fileExists(atPath: Self.userdbPath(daemon)))
            _ = try await daemon.stop()
            try daemon.directory.write("usherd.toml", Self.config)
            try await daemon.start()
            let userdb = try LineConnection(path: Self.userdbPath(daemon))
            let heidi = try await Self.call(userdb, "GetUserRecord", ["userName": "heidi"])
            #expect(heidi["parameters"]?["record"]?["uid"] == 60100)
        }
    }

    @Test func aReloadTurnsTheRecordsOffAndOnAgain() async throws {
        try await DaemonProcess.with(config: Self.config) { daemon in
            let client = try daemon.connect()
            _ = try await Self.logIn(client, "ivy@example.com")
            let userdb = try LineConnection(path: Self.userdbPath(daemon))
            #expect(try await Self.call(userdb, "GetUserRecord", ["userName": "ivy"])["parameters"] != nil)
            func reload(_ config: String, count: Int) async throws {
                try daemon.directory.write("usherd.toml", config)
                kill(daemon.pid, SIGHUP)
                try await eventually { daemon.log.components(separatedBy: "configuration reloaded").count == count + 1 }
            }
            try await reload(Self.config.replacingOccurrences(of: "enabled = true", with: "enabled = false"), count: 1)
            #expect(
                try await Self.call(userdb, "GetUserRecord", ["userName": "ivy"])["error"]
                    == "io.systemd.UserDatabase.ServiceNotAvailable"
            )
            #expect(daemon.log.contains("unix_users.enabled changed"))
            // Users added meanwhile still get their accounts: on again, they are there.
            _ = try await Self.logIn(client, "jon@example.com")
            try await reload(Self.config, count: 2)
            #expect(
                try await Self.call(userdb, "GetUserRecord", ["userName": "jon"])["parameters"]?["record"]?["uid"]
                    == 60101
            )
            // Another range applies at the next restart.
            try await reload(Self.config.replacingOccurrences(of: "60100-60199", with: "60200-60299"), count: 3)
            #expect(daemon.log.contains("unix_users changed: it applies at the next restart"))
        }
    }

    @Test func theSocketIsWorldReadableAndGoesWithTheDaemon() async throws {
        try await DaemonProcess.with(config: Self.config) { daemon async throws in
            var info = stat()
            #expect(lstat(Self.userdbPath(daemon), &info) == 0)
            #expect(info.st_mode & 0o777 == 0o666)
            #expect(daemon.log.contains("user database io.systemd.UserDatabase listening"))
            // Answering (so serving, and stopping gracefully on SIGTERM).
            let userdb = try LineConnection(path: Self.userdbPath(daemon))
            #expect(try await Self.call(userdb, "GetUserRecord", ["uid": 60100])["error"] != nil)
            #expect(try await daemon.stop() == 0)
            #expect(!FileManager.default.fileExists(atPath: Self.userdbPath(daemon)))
        }
    }

    @Test func aBadUnixUsersSectionIsRefusedAtStart() async throws {
        let usherd = try BuiltProducts.path(of: "usherd")
        let directory = try TestDirectory()
        defer { directory.remove() }
        let cases: [(String, String)] = [
            ("uid_range = \"500-1500\"", "unix_users.uid_range: overlaps the system range (0-999"),
            ("uid_range = \"61000-62000\"", "unix_users.uid_range: overlaps systemd's dynamic range"),
            ("uid_range = \"600000-600100\"", "unix_users.uid_range: overlaps the container range"),
            ("uid_range = \"60999-60000\"", "unix_users.uid_range: must be \"FIRST-LAST\""),
            ("uid_range = \"sixty\"", "unix_users.uid_range: must be \"FIRST-LAST\""),
            ("home = \"home/%u\"", "unix_users.home: must be an absolute path"),
            ("groups = [\"wheel:x\"]", "unix_users.groups: \"wheel:x\" is not a valid group name"),
        ]
        for (index, (line, expected)) in cases.enumerated() {
            let path = directory.file("bad\(index).toml")
            try "[unix_users]\nenabled = true\n\(line)\n".write(toFile: path, atomically: true, encoding: .utf8)
            let output = try await runProcess(
                usherd,
                [
                    "--config", path, "--socket", directory.file("s\(index).sock"), "--state-directory",
                    directory.file("state"),
                ]
            )
            #expect(output.status != 0)
            #expect(output.stderr.contains(expected), "\(output.stderr)")
            #expect(!FileManager.default.fileExists(atPath: directory.file("io.usher.Users")))
        }
    }
}
