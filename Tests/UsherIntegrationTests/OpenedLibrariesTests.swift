import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// usherd opens libsystemd and libsqlite3 with `dlopen` when it first needs them (Sources/CSystemd, Sources/CSQLite),
/// so that the CLI, the same file, loads neither. These tests run usherd with an `LD_PRELOAD` library whose `dlopen`
/// refuses the library `REFUSE_DLOPEN` names:
/// - without libsystemd, started by systemd (`NOTIFY_SOCKET` set), usherd refuses to start and says why, instead of
///   never reporting ready; started by hand, it needs nothing of systemd and serves as usual;
/// - without libsqlite3, it refuses to start and names the library;
/// - without libcurl (loaded by the first request to a provider), what needs a provider fails and names the library,
///   and the rest serves.
@Suite(.integrationHangGuard)
struct OpenedLibrariesTests {
    static let preloadSource = """
        #define _GNU_SOURCE
        #include <dlfcn.h>
        #include <stdlib.h>
        #include <string.h>
        void *dlopen(const char *file, int flags) {
            static void *(*real)(const char *, int);
            const char *refused = getenv("REFUSE_DLOPEN");
            if (file && refused && strstr(file, refused)) return NULL;
            if (!real) real = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
            return real(file, flags);
        }
        """

    /// The environment of a usherd whose `dlopen` refuses `library`: the preload compiled into `directory`.
    static func environment(refusing library: String, in directory: TestDirectory) async throws -> [String: String] {
        try directory.write("refuse-dlopen.c", Self.preloadSource)
        let preload = directory.file("refuse-dlopen.so")
        let built = try await runProcess(
            "/usr/bin/cc",
            ["-shared", "-fPIC", "-o", preload, directory.file("refuse-dlopen.c"), "-ldl"]
        )
        #expect(built.status == 0, "\(built.stderr)")
        var environment = ProcessInfo.processInfo.environment
        environment["NOTIFY_SOCKET"] = nil
        environment["LISTEN_FDS"] = nil
        environment["LD_PRELOAD"] = preload
        environment["REFUSE_DLOPEN"] = library
        return environment
    }

    /// usherd started on `directory` with `environment`, to its exit.
    static func run(_ environment: [String: String], in directory: TestDirectory) async throws -> ProcessOutput {
        try await runProcess(
            try BuiltProducts.path(of: "usherd"),
            ["--socket", directory.file("usher.sock"), "--state-directory", directory.file("state")],
            environment: environment
        )
    }

    @Test func startedBySystemdWithoutLibsystemdItRefusesToStartAndSaysWhy() async throws {
        let directory = try TestDirectory()
        defer { directory.remove() }
        var environment = try await Self.environment(refusing: "libsystemd", in: directory)
        // Nothing listens there: a daemon that got as far as notifying would fail differently, or not at all.
        environment["NOTIFY_SOCKET"] = directory.file("notify")
        let result = try await Self.run(environment, in: directory)
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
        let environment = try await Self.environment(refusing: "libsystemd", in: directory)
        try await DaemonProcess.using(try DaemonProcess(config: "")) { daemon in
            try await daemon.start(environment: environment)
            let client = try daemon.connect()
            defer { client.close() }
            let login = try await client.result("login", ["credentials": ["type": "anonymous"]])
            let current = try await client.result("current_user")
            #expect(current["user"]?["state"] == "logged_in", "\(current)")
            #expect(current["user"]?["id"] == login["user"]?["id"])
            // Read to the end by cat: procfs files have no size, and a single read may stop short of the last lines.
            let maps = try await runProcess("/bin/cat", ["/proc/\(daemon.pid)/maps"])
            #expect(maps.status == 0, "\(maps.stderr)")
            #expect(!maps.stdout.contains("libsystemd"), "the preload did not keep libsystemd out")
            #expect(maps.stdout.contains("libsqlite3"), "the store's database is open, so libsqlite3 is loaded")
        }
    }

    @Test func withoutLibsqlite3ItRefusesToStartAndNamesTheLibrary() async throws {
        let directory = try TestDirectory()
        defer { directory.remove() }
        let environment = try await Self.environment(refusing: "libsqlite3", in: directory)
        let result = try await Self.run(environment, in: directory)
        #expect(result.status != 0)
        #expect(result.stderr.contains("cannot load libsqlite3.so.0"), "usherd printed: \(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.file("usher.sock")))
    }

    @Test func withoutLibcurlAProvidersLoginFailsAndNamesTheLibraryWhileTheRestServes() async throws {
        let directory = try TestDirectory()
        defer { directory.remove() }
        let environment = try await Self.environment(refusing: "libcurl", in: directory)
        // Nothing listens there: with libcurl loaded, the login would fail for another reason (connection refused).
        let config = """
            [providers.local]
            type = "local"
            [providers.corp]
            type = "oidc"
            issuer = "http://127.0.0.1:9"
            client_id = "usher"
            """
        try await DaemonProcess.using(try DaemonProcess(config: config)) { daemon in
            try await daemon.start(environment: environment)
            let client = try daemon.connect()
            defer { client.close() }
            let refused = try await client.call(
                "login",
                ["provider": "corp", "credentials": ["type": "password", "username": "grace", "password": "pw"]]
            )
            #expect(refused["error"]?["code"] == "provider_unavailable", "\(refused)")
            #expect(
                refused["error"]?["message"]?.stringValue?.contains(
                    "usherd cannot make HTTP requests: cannot load libcurl.so.4"
                ) == true,
                "\(refused)"
            )
            // The local provider needs no libcurl.
            let login = try await client.result("login", ["credentials": ["type": "anonymous"]])
            #expect(login["user"]?["state"] == "logged_in", "\(login)")
        }
    }
}
