import Foundation
import Testing
import UsherTestSupport

extension OIDCIntegrationTests {
    /// With a display and without `--no-browser`, `usher login` opens the URL with `xdg-open` (started with
    /// `posix_spawn`, its standard streams on /dev/null, not waited for) and still prints it; the login completes.
    @Test func browserLoginOpensTheBrowserWithXdgOpen() async throws {
        let server = try Self.server()
        let bin = try TestDirectory()
        defer { bin.remove() }
        // A stand-in for xdg-open, found first on PATH: it records its arguments and where its streams go.
        let record = bin.file("opened")
        try bin.writeExecutable(
            "xdg-open",
            """
            #!/bin/sh
            streams=$(readlink /proc/$$/fd/0 /proc/$$/fd/1 /proc/$$/fd/2)
            printf '%s\\n%s\\n%s\\n' "$#" "$1" "$streams" > '\(record).partial'
            mv '\(record).partial' '\(record)'

            """
        )
        let path = bin.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        try await DaemonProcess.with(config: server.providers()) { daemon in
            let cli = try BackgroundProcess(
                try Self.usher(),
                ["--socket", daemon.socketPath, "login", "--provider", "code"],
                environment: ["DISPLAY": ":99", "PATH": path]
            )
            let url = try await cli.stderrLine { $0.hasPrefix("http") }
            #expect(cli.stderr.contains("Opening the browser to log in. If it does not open, visit:\n\(url)\n"))
            try await eventually { FileManager.default.fileExists(atPath: record) }
            let opened = try String(contentsOfFile: record, encoding: .utf8).split(separator: "\n").map(String.init)
            #expect(opened == ["1", url, "/dev/null", "/dev/null", "/dev/null"])

            let browser = try await server.browser(["authorize", url, "alice", "alice-password"])
            #expect(browser.status == 0, "\(browser.stderr)")
            #expect(try await cli.exitStatus() == 0, "\(cli.stderr)")
            #expect(cli.stdout.contains("alice@example.com"))
        }
    }
}
