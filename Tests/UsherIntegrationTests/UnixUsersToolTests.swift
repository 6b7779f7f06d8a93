import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// `[unix_users]` through tools this project did not write: systemd's `userdbctl` (systemd-userdbd), and `getent`
/// and `id` through glibc's NSS and `nss-systemd`. Each test's daemon binds a uniquely named socket in
/// `/run/systemd/userdb` (where those tools look; root only) and removes it when it stops.
@Suite(.integrationHangGuard, .enabled(if: getuid() == 0, "binding a socket in /run/systemd/userdb needs root"))
struct UnixUsersToolTests {
    /// A daemon whose user database socket is `/run/systemd/userdb/io.usher.Users-test-RANDOM`, with one user logged
    /// in (`LOCAL@example.com`, uids from `firstUID`); `body` gets the daemon and the service name. Each test its own
    /// user and range: NSS asks every daemon the tests run at once.
    static func withDaemon(
        _ local: String,
        firstUID: Int,
        _ body: (DaemonProcess, String) async throws -> Void
    ) async throws {
        let service = "io.usher.Users-test-\(UInt32.random(in: 0...UInt32.max))"
        let config = """
            [unix_users]
            enabled = true
            socket = "/run/systemd/userdb/\(service)"
            uid_range = "\(firstUID)-\(firstUID + 99)"
            groups = ["audio"]

            """
        try await DaemonProcess.with(config: config) { daemon in
            let client = try daemon.connect()
            let email = JSONValue.string("\(local)@example.com")
            _ = try await client.result("register", ["email": email, "password": "first secret"])
            let login = try await client.result(
                "login",
                [
                    "credentials": [
                        "type": "email_password", "email": email, "password": "first secret",
                    ]
                ]
            )
            #expect(login["user"]?["id"] != nil)
            try await body(daemon, service)
            #expect(try await daemon.stop() == 0)
            #expect(!FileManager.default.fileExists(atPath: "/run/systemd/userdb/\(service)"))
        }
    }

    static func tool(_ path: String) throws -> String {
        try #require(
            FileManager.default.isExecutableFile(atPath: path),
            "\(path) is missing: make test-deps installs it (Debian: systemd-userdbd, libc-bin)"
        )
        return path
    }

    @Test func userdbctlShowsTheUser() async throws {
        let userdbctl = try Self.tool("/usr/bin/userdbctl")
        try await Self.withDaemon("quinn.o", firstUID: 60_700) { _, service in
            // -N: this service's records only, not glibc's NSS.
            let user = try await runProcess(userdbctl, ["-N", "-s", service, "--output=json", "user", "quinn_o"])
            #expect(user.status == 0, "\(user.stderr)")
            let record = try JSONDecoder().decode(JSONValue.self, from: Data(user.stdout.utf8))
            #expect(record["userName"] == "quinn_o")
            #expect(record["uid"] == 60700)
            #expect(record["gid"] == 60700)
            #expect(record["homeDirectory"] == "/home/quinn_o")
            #expect(record["shell"] == "/bin/bash")
            #expect(record["emailAddress"] == "quinn.o@example.com")
            #expect(record["service"] == "io.usher.Users")

            let byUID = try await runProcess(userdbctl, ["-N", "-s", service, "--output=classic", "user", "60700"])
            #expect(byUID.stdout.contains("quinn_o:x:60700:60700:"), "\(byUID.stdout) \(byUID.stderr)")
            let missing = try await runProcess(userdbctl, ["-N", "-s", service, "user", "nobody-such"])
            #expect(missing.status != 0)
            #expect(missing.stderr.contains("does not exist"), "\(missing.stderr)")

            let group = try await runProcess(userdbctl, ["-N", "-s", service, "--output=classic", "group", "quinn_o"])
            #expect(group.stdout.contains("quinn_o:x:60700:"), "\(group.stdout) \(group.stderr)")
            let memberships = try await runProcess(userdbctl, ["-N", "-s", service, "groups-of-user", "quinn_o"])
            #expect(memberships.stdout.contains("quinn_o audio"), "\(memberships.stdout) \(memberships.stderr)")
            // Enumeration (`more`).
            let all = try await runProcess(userdbctl, ["-N", "-s", service, "--output=classic", "user"])
            #expect(all.stdout.contains("quinn_o:x:60700:60700:"), "\(all.stdout) \(all.stderr)")
        }
    }

    static var nsswitchAsksSystemd: Bool {
        guard let text = try? String(contentsOfFile: "/etc/nsswitch.conf", encoding: .utf8) else { return false }
        let configured = text.split(separator: "\n").contains { $0.hasPrefix("passwd:") && $0.contains("systemd") }
        let installed = ["/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu"].contains {
            FileManager.default.fileExists(atPath: "\($0)/libnss_systemd.so.2")
        }
        return configured && installed
    }

    @Test(
        .enabled(
            if: Self.nsswitchAsksSystemd,
            "needs nss-systemd (libnss-systemd) in /etc/nsswitch.conf; the systemd boot test covers it otherwise"
        )
    )
    func getentAndIDFindTheUserThroughNSS() async throws {
        let getent = try Self.tool("/usr/bin/getent")
        try await Self.withDaemon("rosa.p", firstUID: 60_800) { _, _ in
            let passwd = try await runProcess(getent, ["passwd", "rosa_p"])
            #expect(passwd.status == 0)
            #expect(passwd.stdout == "rosa_p:x:60800:60800:rosa_p:/home/rosa_p:/bin/bash\n", "\(passwd.stdout)")
            let byUID = try await runProcess(getent, ["passwd", "60800"])
            #expect(byUID.stdout.hasPrefix("rosa_p:x:60800:"))
            let group = try await runProcess(getent, ["group", "rosa_p"])
            #expect(group.stdout.hasPrefix("rosa_p:x:60800:"))
            // initgroups: the configured supplementary group, through GetMemberships.
            let id = try await runProcess("/usr/bin/id", ["rosa_p"])
            #expect(id.stdout.contains("uid=60800(rosa_p) gid=60800(rosa_p)"), "\(id.stdout)")
            #expect(id.stdout.contains("(audio)"), "\(id.stdout)")
        }
        // The daemon gone, so is the user.
        let gone = try await runProcess(getent, ["passwd", "rosa_p"])
        #expect(gone.status == 2)
    }
}
