import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// usherd opens libsystemd with `dlopen` when it first needs it (Sources/CSystemd), so that the CLI, the same file,
/// does not load it. These tests run usherd with an `LD_PRELOAD` library whose `dlopen` refuses libsystemd: started by
/// systemd (`NOTIFY_SOCKET` set), usherd must refuse to start and say why, not run without ever reporting ready; started
/// by hand, it needs nothing of systemd and serves as usual.
@Suite(.integrationHangGuard)
struct SystemdLibraryTests {
    static let preloadSource = """
        #define _GNU_SOURCE
        #include <dlfcn.h>
        #include <string.h>
        void *dlopen(const char *file, int flags) {
            static void *(*real)(const char *, int);
            if (file && strstr(file, "libsystemd")) return NULL;
            if (!real) real = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
            return real(file, flags);
        }
        """

    /// The `LD_PRELOAD` library, compiled into `directory`.
    static func libraryRefusingLibsystemd(in directory: TestDirectory) async throws -> String {
        try directory.write("no-libsystemd.c", Self.preloadSource)
        let library = directory.file("no-libsystemd.so")
        let built = try await runProcess(
            "/usr/bin/cc",
            ["-shared", "-fPIC", "-o", library, directory.file("no-libsystemd.c"), "-ldl"]
        )
        #expect(built.status == 0, "\(built.stderr)")
        return library
    }

    @Test func startedBySystemdWithoutLibsystemdItRefusesToStartAndSaysWhy() async throws {
        let directory = try TestDirectory()
        defer { directory.remove() }
        let preload = try await Self.libraryRefusingLibsystemd(in: directory)
        var environment = ProcessInfo.processInfo.environment
        environment["LD_PRELOAD"] = preload
        // Nothing listens there: a daemon that got as far as notifying would fail differently, or not at all.
        environment["NOTIFY_SOCKET"] = directory.file("notify")
        let result = try await runProcess(
            try BuiltProducts.path(of: "usherd"),
            ["--socket", directory.file("usher.sock"), "--state-directory", directory.file("state")],
            environment: environment
        )
        #expect(result.status != 0)
        #expect(
            result.stderr.contains("systemd started usherd, but cannot load libsystemd.so.0"),
            "usherd printed: \(result.stderr)"
        )
        #expect(!FileManager.default.fileExists(atPath: directory.file("usher.sock")))
    }

    @Test func startedByHandWithoutLibsystemdItServes() async throws {
        let directory = try TestDirectory()
        defer { directory.remove() }
        let preload = try await Self.libraryRefusingLibsystemd(in: directory)
        let daemon = try DaemonProcess(config: "")
        try await DaemonProcess.using(daemon) { daemon in
            var environment = ProcessInfo.processInfo.environment
            environment["NOTIFY_SOCKET"] = nil
            environment["LISTEN_FDS"] = nil
            environment["LD_PRELOAD"] = preload
            try await daemon.start(environment: environment)
            let client = try daemon.connect()
            defer { client.close() }
            let login = try await client.result("login", ["credentials": ["type": "anonymous"]])
            let current = try await client.result("current_user")
            #expect(current["user"]?["state"] == "logged_in", "\(current)")
            #expect(current["user"]?["id"] == login["user"]?["id"])
            let maps = try String(contentsOfFile: "/proc/\(daemon.pid)/maps", encoding: .utf8)
            #expect(!maps.contains("libsystemd"), "the preload did not keep libsystemd out")
        }
    }
}
