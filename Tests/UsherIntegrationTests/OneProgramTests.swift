import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// usherd is the CLI too: the package installs `usher` as a hard link to `usherd` (and `git-credential-usher` as a
/// symbolic link to `usher`), so that a device stores the Swift runtime and the libraries both programs use once. The
/// file runs the daemon under the name `usherd` and the CLI under any other. These tests lay the built usherd out as
/// the package does, in a directory of their own, and run it under each name.
@Suite(.integrationHangGuard)
struct OneProgramTests {
    /// The built usherd copied to `directory/bin/usherd`, with `usher` a hard link to it and `git-credential-usher` a
    /// symbolic link to `usher`, as `make install` lays them out. Returns the directory.
    static func installedLayout(in directory: TestDirectory) throws -> String {
        let bin = directory.file("bin")
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        try ExecutableFile.copy(try BuiltProducts.path(of: "usherd"), to: "\(bin)/usherd")
        try FileManager.default.linkItem(atPath: "\(bin)/usherd", toPath: "\(bin)/usher")
        try FileManager.default.createSymbolicLink(atPath: "\(bin)/git-credential-usher", withDestinationPath: "usher")
        return bin
    }

    @Test func theFileIsTheDaemonAsUsherdAndTheCLIAsUsher() async throws {
        let directory = try TestDirectory()
        let bin = try Self.installedLayout(in: directory)
        let usher = try await runProcess("\(bin)/usher", ["--help"])
        #expect(usher.status == 0, "\(usher.stderr)")
        #expect(usher.stdout.contains("Talk to usherd"), "usher --help printed \(usher.stdout)")
        #expect(usher.stdout.contains("SUBCOMMANDS"), "usher --help printed \(usher.stdout)")
        let usherd = try await runProcess("\(bin)/usherd", ["--help"])
        #expect(usherd.status == 0, "\(usherd.stderr)")
        #expect(usherd.stdout.contains("--state-directory"), "usherd --help printed \(usherd.stdout)")
        #expect(!usherd.stdout.contains("Talk to usherd"), "usherd --help printed the CLI's help: \(usherd.stdout)")
        // With no name at all (an empty argv[0]), the daemon, as before usherd was the CLI too.
        let nameless = try await runProcess(
            "/usr/bin/python3",
            [
                "-c",
                "import subprocess, sys; sys.exit(subprocess.run(['', '--help'], executable=sys.argv[1]).returncode)",
                "\(bin)/usher",
            ]
        )
        #expect(nameless.status == 0, "\(nameless.stderr)")
        #expect(nameless.stdout.contains("--state-directory"), "with an empty argv[0]: \(nameless.stdout)")
        // Run by git: the git-credential subcommand, whose help names the credential protocol's operations.
        let git = try await runProcess("\(bin)/git-credential-usher", ["--help"])
        #expect(git.status == 0, "\(git.stderr)")
        #expect(git.stdout.contains("usher git-credential"), "git-credential-usher --help printed \(git.stdout)")
        // One version, whichever name.
        let version = try InstallTests.version() + "\n"
        for name in ["usher", "usherd"] {
            let printed = try await runProcess("\(bin)/\(name)", ["--version"])
            #expect(printed.stdout == version, "\(name) --version printed \(printed.stdout)")
        }
    }

    /// The CLI run from the hard link talks to a daemon run from the same file, and usherd identifies it by the name it
    /// was run by (`/proc/PID/exe` of a hard link is that link's path), so that an `[[access.rule]]` with `executable =
    /// "/usr/bin/usher"` still names the CLI and not the daemon's path.
    @Test func theCLIUnderItsOwnNameTalksToTheDaemonAndIsIdentifiedByThatName() async throws {
        let directory = try TestDirectory()
        let bin = try Self.installedLayout(in: directory)
        try await DaemonProcess.with { daemon in
            let socket = ["--socket", daemon.socketPath]
            let login = try await runProcess("\(bin)/usher", ["login", "--anonymous"] + socket)
            #expect(login.status == 0, "\(login.stderr)")
            let whoami = try await runProcess("\(bin)/usher", ["--json", "whoami", "--program"] + socket)
            #expect(whoami.status == 0, "\(whoami.stderr)")
            let hello = try JSONDecoder().decode(JSONValue.self, from: Data(whoami.stdout.utf8))
            #expect(hello["program"]?["executable"] == .string("\(bin)/usher"), "\(whoami.stdout)")
            let users = try await daemon.connect().result("list_users")
            #expect(users["users"]?.arrayValue?.count == 1, "\(users)")
        }
    }
}
