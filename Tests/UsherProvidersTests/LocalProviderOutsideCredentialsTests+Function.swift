import Crypto
import Foundation
import NIOPosix
import Synchronization
import Testing
import UsherCore
import UsherProtocol
import UsherStore
import UsherTestSupport

@testable import UsherProviders

#if canImport(Glibc)
import Glibc
#endif

/// The `function` credential: a configured command decides, supervised by `usherd`.
extension LocalProviderOutsideCredentialsTests {
    static func function(_ mode: String, user: String = "ann") -> [String: JSONValue] {
        ["type": "function", "payload": ["mode": .string(mode), "user": .string(user)]]
    }

    /// The `usherd` that supervises each run: the built one, since these tests run inside the test runner.
    static func supervisor() throws -> String {
        try BuiltProducts.path(of: "usherd")
    }

    /// A provider whose function is the test hook (or the gated one). The default timeout is a hang guard only: a
    /// run's outcome must not depend on how fast the machine starts processes.
    static func withHook<T>(
        timeout: Int64 = 60_000,
        maximumConcurrent: Int = 4,
        gated: Bool = false,
        _ body: (Setup, Fixture) async throws -> T
    ) async throws -> T {
        let setup = try Setup()
        let command = gated ? try GatedHook.install(in: setup.directory) : setup.hook
        setup.configuration.function = FunctionHookConfiguration(
            command: [command],
            supervisor: try Self.supervisor(),
            timeoutMilliseconds: timeout,
            maximumConcurrent: maximumConcurrent
        )
        return try await setup.run { fixture in try await body(setup, fixture) }
    }

    @Test func functionAcceptsAndRefuses() async throws {
        try await Self.withHook { _, fixture in
            let provider = fixture.provider
            let login = try await provider.authenticate(credentials: Self.function("accept", user: "badge-42"))
            #expect(login.subject == "function:badge-42")
            #expect(login.kind == "function")
            #expect(login.email == "badge-42@example.com")
            #expect(login.name == "Hook User")
            #expect(login.tokens.refreshToken != nil)
            let again = try await provider.authenticate(credentials: Self.function("accept", user: "badge-42"))
            #expect(again.subject == login.subject)

            #expect(await Self.failure(provider, Self.function("refuse")) == .invalidCredentials("no such badge"))
            #expect(
                await Self.failure(provider, ["type": "function", "payload": "not an object"])
                    == .invalidParams(parameter: "credentials", "function credentials need an object payload")
            )
        }
    }

    @Test func functionFailuresAreRefusalsWithClearMessages() async throws {
        try await Self.withHook { _, fixture in
            let provider = fixture.provider
            let expectations: [(String, ProviderError)] = [
                ("crash", .invalidCredentials("the authentication function crashed (signal 11)")),
                ("garbage", .invalidCredentials("the authentication function's output is not a JSON object")),
                ("array", .invalidCredentials("the authentication function's output is not a JSON object")),
                (
                    "huge",
                    .invalidCredentials("the authentication function's output is too large (more than 65536 bytes)")
                ),
                ("fail", .invalidCredentials("the authentication function exited with status 3")),
                (
                    "unknown-mode-answers-an-error",
                    .invalidCredentials("unknown mode")
                ),
            ]
            for (mode, expected) in expectations {
                #expect(await Self.failure(provider, Self.function(mode)) == expected, "mode \(mode)")
            }
        }
    }

    @Test func aFunctionThatHangsIsStoppedAtItsTimeout() async throws {
        try await Self.withHook(timeout: 1000) { _, fixture in
            let started = ContinuousClock.now
            #expect(
                await Self.failure(fixture.provider, Self.function("hang"))
                    == .invalidCredentials("the authentication function did not answer within 1s and was stopped")
            )
            // Not cut short. (How soon after the limit it ends is the machine's business; that a killed run's
            // processes are gone when it returns is `cancellingARunKillsTheCommandAndWhatItStarted`'s.)
            #expect(ContinuousClock.now - started >= .milliseconds(900))
        }
    }

    @Test func functionRunsInACleanEnvironment() async throws {
        try await Self.withHook { _, fixture in
            let login = try await fixture.provider.authenticate(credentials: Self.function("env"))
            let variables = Set(login.subject.dropFirst("function:".count).split(separator: ",").map(String.init))
            #expect(variables.contains("PATH=/usr/bin:/bin"))
            #expect(variables.contains("LANG=C.UTF-8"))
            #expect(variables.contains("USHER_PROVIDER=local"))
            // Nothing of the daemon's own environment (the shell may add PWD, SHLVL and `_` itself).
            let ours = Set(ProcessInfo.processInfo.environment.keys).subtracting(["PATH", "LANG", "PWD", "SHLVL", "_"])
            #expect(!ours.isEmpty)
            #expect(variables.allSatisfy { variable in !ours.contains(String(variable.prefix { $0 != "=" })) })
        }
    }

    @Test func functionRunsAtMostMaxConcurrentAtOnce() async throws {
        // The gated hook holds every run until the gate opens: the first three are then under way at once whatever
        // the machine's speed, and the others wait their turn (however long that takes) instead of being turned away.
        try await Self.withHook(timeout: 120_000, maximumConcurrent: 3, gated: true) { setup, fixture in
            let provider = fixture.provider
            let subjects = try await withThrowingTaskGroup(of: String.self) { group in
                for index in 0..<10 {
                    group.addTask {
                        try await provider.authenticate(credentials: Self.function("gated", user: "user-\(index)"))
                            .subject
                    }
                }
                try await GatedHook.waitUntilStarted(3, in: setup.directory)
                // Three hold the three slots; no fourth has started beside them.
                #expect(GatedHook.started(in: setup.directory) == 3)
                try GatedHook.open(in: setup.directory)
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
            #expect(subjects == Set((0..<10).map { "function:gated-user-\($0)" }))
            let runs = try TestHooks.runs(in: setup.directory)
            #expect(runs.count == 10)
            #expect(TestHooks.maximumOverlap(runs) == 3)
        }
    }
}
