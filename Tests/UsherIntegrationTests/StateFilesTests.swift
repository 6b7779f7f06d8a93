import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// One daemon per state directory, and the files usherd keeps secrets in: what it refuses, repairs or warns about at
/// start, on the real daemon.
@Suite(.integrationHangGuard)
struct StateFilesTests {
    /// Runs usherd with `config` on `stateDirectory` and returns once it has exited by itself, as a daemon that
    /// refuses to start does.
    static func refusal(
        _ directory: TestDirectory,
        stateDirectory: String,
        config: String = ""
    ) async throws -> ProcessOutput {
        try directory.write("refused.toml", config)
        return try await runProcess(
            try BuiltProducts.path(of: "usherd"),
            [
                "--config", directory.file("refused.toml"), "--socket", directory.file("refused.sock"),
                "--state-directory", stateDirectory,
            ],
            timeout: hangGuard
        )
    }

    static func mode(_ path: String) -> mode_t {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode & 0o7777 : 0
    }

    // MARK: One daemon per state directory

    @Test func aSecondDaemonOnTheSameStateDirectoryExitsNamingTheFirst() async throws {
        try await DaemonProcess.with { first in
            _ = try await first.connect().result("login", ["credentials": ["type": "anonymous"]])
            let second = try DaemonProcess()
            try await DaemonProcess.using(second) { second in
                try await second.start(
                    extraArguments: ["--state-directory", first.stateDirectory],
                    waitForSocket: false
                )
                let deadline = ContinuousClock.now + hangGuard
                while second.isRunning {
                    guard ContinuousClock.now < deadline else {
                        throw TestSupportError("the second daemon did not exit:\n\(second.log)")
                    }
                    try await Task.sleep(for: .milliseconds(20))
                }
                #expect(try await second.stop() == 75, "\(second.log)")
                #expect(second.log.contains("state directory \(first.stateDirectory) is in use"), "\(second.log)")
                #expect(second.log.contains("(pid \(first.pid))"), "\(second.log)")
                #expect(!FileManager.default.fileExists(atPath: second.socketPath))

                // The first never noticed.
                let users = try await first.connect().result("list_users")["users"]?.arrayValue ?? []
                #expect(users.count == 1)

                // Once it is gone, the next daemon takes the directory over, with the same users.
                try await first.stop()
                try await second.start(extraArguments: ["--state-directory", first.stateDirectory])
                let taken = try await second.connect().result("list_users")["users"]?.arrayValue ?? []
                #expect(taken.count == 1)
                #expect(Self.mode(first.stateDirectory + "/usherd.lock") == 0o600)
            }
        }
    }

    // MARK: Repaired, and logged

    @Test func aDatabaseOthersCanReadIsMadePrivateAgainAndLogged() async throws {
        try await DaemonProcess.with { daemon in
            _ = try await daemon.connect().result("login", ["credentials": ["type": "anonymous"]])
            try await daemon.stop()
            let database = daemon.stateDirectory + "/usher.sqlite"
            #expect(chmod(database, 0o644) == 0)
            try await daemon.start()
            #expect(Self.mode(database) == 0o600)
            #expect(daemon.log.contains("state file was accessible to group or others: changed its mode to 0600"))
            #expect(daemon.log.contains(database))
            #expect((try await daemon.connect().result("list_users")["users"]?.arrayValue ?? []).count == 1)
        }
    }

    @Test func aStateDirectoryOthersCanReadIsMadePrivateAgainAndLogged() async throws {
        try await DaemonProcess.with { daemon in
            try await daemon.stop()
            #expect(chmod(daemon.stateDirectory, 0o755) == 0)
            try await daemon.start()
            #expect(Self.mode(daemon.stateDirectory) == 0o700)
            #expect(daemon.log.contains("state directory was accessible to group or others: changed its mode to 0700"))
        }
    }

    // MARK: Refused

    @Test func aStateDirectoryOthersCanWriteIsRefused() async throws {
        let directory = try TestDirectory()
        defer { directory.remove() }
        let state = directory.file("state")
        #expect(mkdir(state, 0o700) == 0 && chmod(state, 0o777) == 0)
        let output = try await Self.refusal(directory, stateDirectory: state)
        #expect(output.status == 77, "\(output.stderr)")
        #expect(output.stderr.contains("\(state): writable by group or others (mode 0777)"), "\(output.stderr)")
        #expect(!FileManager.default.fileExists(atPath: state + "/usher.sqlite"))
    }

    @Test(.enabled(if: geteuid() == 0, "only root can give files to another user (uid 65534)"))
    func aStateDirectoryReachedThroughSomeoneElsesSymbolicLinkIsRefused() async throws {
        let directory = try TestDirectory()
        defer { directory.remove() }
        let real = directory.file("real")
        let link = directory.file("link")
        #expect(mkdir(real, 0o700) == 0 && symlink(real, link) == 0 && lchown(link, 65534, 65534) == 0)
        let output = try await Self.refusal(directory, stateDirectory: link)
        #expect(output.status == 77, "\(output.stderr)")
        #expect(output.stderr.contains("\(link) is a symbolic link owned by uid 65534"), "\(output.stderr)")
        #expect(!FileManager.default.fileExists(atPath: real + "/usher.sqlite"))
    }

    @Test(.enabled(if: geteuid() == 0, "only root can give files to another user (uid 65534)"))
    func keyFilesOwnedBySomeoneElseAreRefused() async throws {
        // The token encryption key.
        let directory = try TestDirectory()
        defer { directory.remove() }
        let key = directory.file("token.key")
        try directory.write("token.key", String(repeating: "ab", count: 32) + "\n")
        #expect(chmod(key, 0o600) == 0 && chown(key, 65534, 65534) == 0)
        var output = try await Self.refusal(
            directory,
            stateDirectory: directory.file("state"),
            config: "[daemon]\ntoken_encryption_key = \"\(key)\"\n"
        )
        #expect(output.status == 77, "\(output.stderr)")
        #expect(output.stderr.contains("\(key): token encryption key owned by uid 65534"), "\(output.stderr)")

        // The signing key, made by a first start.
        try await DaemonProcess.with { daemon in
            try await daemon.stop()
            let signingKey = daemon.stateDirectory + "/signing-key.pem"
            #expect(chown(signingKey, 65534, 65534) == 0)
            output = try await Self.refusal(daemon.directory, stateDirectory: daemon.stateDirectory)
            #expect(output.status == 77, "\(output.stderr)")
            #expect(output.stderr.contains("signing key \(signingKey) is owned by uid 65534"), "\(output.stderr)")
        }
    }

    @Test func filesUsherdTakesOrdersFromMayNotBeRewritableByOthers() async throws {
        let directory = try TestDirectory()
        defer { directory.remove() }
        let config = directory.file("usherd.toml")
        let hook = directory.file("hook.sh")
        let keys = directory.file("keys.json")
        try directory.writeExecutable("hook.sh", "#!/bin/sh\necho '{\"subject\": \"x\"}'\n")
        try directory.write("keys.json", #"{"keys": []}"#)
        try directory.write(
            "usherd.toml",
            """
            [providers.local]
            type = "local"
            [providers.local.function]
            command = ["\(hook)"]
            [providers.local.jwt]
            issuer = "https://issuer.example"
            audience = "usher"
            jwks_file = "\(keys)"
            """
        )
        let cases: [(path: String, what: String, mode: mode_t)] = [
            (config, "configuration file", 0o666), (hook, "function command", 0o777), (keys, "JWK set file", 0o664),
        ]
        for (path, what, mode) in cases {
            #expect(chmod(config, 0o644) == 0 && chmod(hook, 0o755) == 0 && chmod(keys, 0o644) == 0)
            #expect(chmod(path, mode) == 0)
            let output = try await runProcess(
                try BuiltProducts.path(of: "usherd"),
                [
                    "--config", config, "--socket", directory.file("s.sock"), "--state-directory",
                    directory.file("state"),
                ],
                timeout: hangGuard
            )
            #expect(output.status == 77, "\(what): \(output.stderr)")
            #expect(
                output.stderr.contains(
                    "\(path): \(what) writable by group or others (mode 0\(String(mode, radix: 8)))"
                ),
                "\(output.stderr)"
            )
        }
    }

    /// systemd hands a credential to a service's user as a 0400 file owned by root with an ACL entry for that user
    /// (its mode then shows the ACL mask as group bits): private, and accepted. An entry for anyone else is not.
    @Test(
        .enabled(if: geteuid() == 0, "only root can give files to another user (uid 65534)"),
        .enabled("the file system of the test directories must take POSIX ACLs") { try ACL.isSupported() }
    )
    func aTokenKeyIsJudgedByItsACLEntries() async throws {
        let daemon = try DaemonProcess()
        let key = daemon.directory.file("token.key")
        try daemon.directory.write("token.key", String(repeating: "cd", count: 32) + "\n")
        #expect(chmod(key, 0o400) == 0)
        #expect(ACL.set(key, readers: [geteuid()]))
        #expect(Self.mode(key) == 0o440)
        try daemon.directory.write("usherd.toml", "[daemon]\ntoken_encryption_key = \"\(key)\"\n")
        try await DaemonProcess.using(daemon) { daemon in
            try await daemon.start()
            try await daemon.stop()
            #expect(ACL.set(key, readers: [geteuid(), 65534]))
            let output = try await Self.refusal(
                daemon.directory,
                stateDirectory: daemon.stateDirectory,
                config: "[daemon]\ntoken_encryption_key = \"\(key)\"\n"
            )
            #expect(output.status == 77, "\(output.stderr)")
            #expect(output.stderr.contains("UNPROTECTED TOKEN ENCRYPTION KEY FILE"), "\(output.stderr)")
        }
    }

    // MARK: Warned about

    @Test func aClientSecretFileOthersCanReadIsWarnedAbout() async throws {
        let daemon = try DaemonProcess()
        try daemon.directory.write("open.secret", "s3cret-open\n")
        try daemon.directory.write("closed.secret", "s3cret-closed\n")
        #expect(chmod(daemon.directory.file("open.secret"), 0o644) == 0)
        #expect(chmod(daemon.directory.file("closed.secret"), 0o600) == 0)
        try daemon.directory.write(
            "usherd.toml",
            """
            [providers.local]
            type = "local"
            [providers.open]
            type = "oidc"
            issuer = "http://127.0.0.1:9"
            client_id = "usher"
            client_secret_file = "open.secret"
            [providers.closed]
            type = "oidc"
            issuer = "http://127.0.0.1:9"
            client_id = "usher"
            client_secret_file = "closed.secret"
            """
        )
        try await DaemonProcess.using(daemon) { daemon in
            try await daemon.start()
            let log = daemon.log
            #expect(
                log.contains(
                    "UNPROTECTED SECRET FILE: permissions 0644 for '\(daemon.directory.file("open.secret"))' are too open"
                ),
                "\(log)"
            )
            #expect(log.contains("providers.open.client_secret_file"))
            #expect(!log.contains("closed.secret"))
            #expect(!log.contains("s3cret"))
        }
    }
}

/// Sets a file's POSIX access ACL (`system.posix_acl_access`) directly, as `setfacl` would, without needing it
/// installed.
enum ACL {
    private typealias SetXattr =
        @convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafeRawPointer, Int, Int32) -> Int32

    /// Whether the file system of the test directories takes an ACL (a test that needs one is skipped, and reported
    /// as skipped, where it does not).
    static func isSupported() throws -> Bool {
        let directory = try TestDirectory()
        defer { directory.remove() }
        try directory.write("probe", "")
        return Self.set(directory.file("probe"), readers: [geteuid()])
    }

    /// Owner and `readers` may read; the owning group and others may not. Returns false when the file system refuses.
    static func set(_ path: String, readers: [uid_t]) -> Bool {
        guard let address = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "setxattr") else { return false }
        let setxattr = unsafeBitCast(address, to: SetXattr.self)
        let undefined = UInt32.max
        // (tag, permissions, id): USER_OBJ, USER..., GROUP_OBJ, MASK, OTHER, in that order.
        let entries: [(UInt16, UInt16, UInt32)] =
            [(0x01, 4, undefined)] + readers.sorted().map { (0x02, 4, $0) } + [
                (0x04, 0, undefined), (0x10, 4, undefined), (0x20, 0, undefined),
            ]
        var bytes: [UInt8] = [2, 0, 0, 0]
        for (tag, permissions, id) in entries {
            bytes += [UInt8(tag & 0xFF), UInt8(tag >> 8), UInt8(permissions & 0xFF), UInt8(permissions >> 8)]
            bytes += (0..<4).map { UInt8((id >> (8 * $0)) & 0xFF) }
        }
        return bytes.withUnsafeBytes { setxattr(path, "system.posix_acl_access", $0.baseAddress!, $0.count, 0) } == 0
    }
}
