import Testing

@testable import UsherDaemon

/// `[unix_users]` as the configuration file gives it: defaults, every key, and what is refused, by key.
struct UnixUsersConfigurationTests {
    @Test func defaultsAndEveryKey() throws {
        let defaults = try DaemonConfiguration(toml: "", file: "t.toml").unixUsers
        #expect(!defaults.enabled && defaults.settings.uidRange == 60_000...60_999)
        #expect(defaults.settings.shell == "/bin/bash" && defaults.settings.homeTemplate == "/home/%u")
        let text = """
            [unix_users]
            enabled = true
            socket = "/run/x/io.usher.Users"
            uid_range = "70000-70010"
            shell = "/bin/zsh"
            home = "/srv/%U/%u%%"
            groups = ["audio", "plugdev"]
            """
        let parsed = try DaemonConfiguration(toml: text, file: "t.toml").unixUsers
        #expect(parsed.enabled && parsed.socket == "/run/x/io.usher.Users")
        #expect(parsed.settings.uidRange == 70_000...70_010 && parsed.settings.groups == ["audio", "plugdev"])
        #expect(parsed.settings.home(name: "ann", uid: 70_000) == "/srv/70000/ann%")
    }

    @Test(arguments: [
        ("uid_range = \"999-2000\"", "unix_users.uid_range: overlaps the system range (0-999"),
        ("uid_range = \"60000-61184\"", "unix_users.uid_range: overlaps systemd's dynamic range"),
        ("uid_range = \"65534-65534\"", "unix_users.uid_range: overlaps nobody"),
        ("uid_range = \"524287-524288\"", "unix_users.uid_range: overlaps the container range"),
        ("uid_range = \"2-1\"", "unix_users.uid_range: must be"),
        ("uid_range = \"+1-2\"", "unix_users.uid_range: must be"),
        ("uid_range = \"1000\"", "unix_users.uid_range: must be"),
        ("shell = \"bash\"", "unix_users.shell: must be an absolute path"),
        ("home = \"/home/%n\"", "unix_users.home: must be an absolute path"),
        ("home = \"/home/%\"", "unix_users.home: must be an absolute path"),
        ("socket = \"io.usher.Users\"", "unix_users.socket: must be an absolute path"),
        ("groups = [\"-x\"]", "unix_users.groups: \"-x\" is not a valid group name"),
        ("uid = 1", "unix_users.uid: unknown key"),
    ])
    func badValuesAreRefusedByKey(line: String, message: String) {
        #expect {
            _ = try DaemonConfiguration(toml: "[unix_users]\n\(line)\n", file: "t.toml")
        } throws: { error in
            "\(error)".contains(message)
        }
    }

    @Test func loginDefsAndTheSocketsDefault() {
        #expect(
            UnixUsersConfiguration.systemAccountMaximum(loginDefs: "# SYS_UID_MAX 5\nSYS_UID_MAX\t\t1999\n") == 1999
        )
        #expect(UnixUsersConfiguration.systemAccountMaximum(loginDefs: "UID_MIN 1000\n") == nil)
        #expect(UnixUsersConfiguration.uidRangeProblem("1500-1600", systemAccountMaximum: 1999) != nil)
        let configuration = UnixUsersConfiguration()
        #expect(
            configuration.resolvedSocketPath(socketPath: "/tmp/a/usher.sock", environment: [:])
                == "/tmp/a/io.usher.Users"
        )
        #expect(
            configuration.resolvedSocketPath(
                socketPath: "/run/usher/usher.sock",
                environment: ["RUNTIME_DIRECTORY": "/run/usher"]
            )
                == "/run/systemd/userdb/io.usher.Users"
        )
    }
}
