import Foundation
import Testing
import UsherProtocol

/// Acting as another user from inside the test process: connections whose peer credentials (`SO_PEERCRED`) are a
/// different uid, and file operations made with that uid's rights.
///
/// Linux keeps credentials per thread; only the C library's wrappers (`setuid`, `setresuid`) change them for every
/// thread of the process. So a thread of our own makes the raw system calls, which change only its own credentials,
/// does its work and ends; no other thread of the test process is ever affected. This needs root (tests that use it
/// skip with `unavailableReason` otherwise).
package enum OtherUser {
    /// The uid and gid of `nobody`, which owns nothing and is in no group.
    package static let nobody: UInt32 = 65534

    /// Why this machine cannot act as another user, or nil when it can.
    package static var unavailableReason: String? {
        guard geteuid() == 0 else { return "acting as another uid needs root; the tests run as uid \(geteuid())" }
        guard Self.rawSyscall != nil else { return "syscall(2) cannot be found in this process" }
        return nil
    }

    /// Runs `body` on a new thread whose real, effective and saved uid and gid are `uid` and `gid`, with no
    /// supplementary groups. The thread ends when `body` returns.
    package static func run<T: Sendable>(
        uid: UInt32 = Self.nobody,
        gid: UInt32 = Self.nobody,
        _ body: @escaping @Sendable () throws -> T
    ) async throws -> T {
        if let reason = Self.unavailableReason { throw TestSupportError(reason) }
        return try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                // Groups and gid first: once the uid is no longer 0, they cannot be changed.
                guard Self.syscall(Self.setgroupsNumber, 0, 0, 0) == 0,
                    Self.syscall(Self.setresgidNumber, Int(gid), Int(gid), Int(gid)) == 0,
                    Self.syscall(Self.setresuidNumber, Int(uid), Int(uid), Int(uid)) == 0,
                    geteuid() == uid
                else {
                    continuation.resume(throwing: TestSupportError("cannot switch a thread to uid \(uid)"))
                    return
                }
                continuation.resume(with: Result { try body() })
            }
            thread.start()
        }
    }

    /// A connection to the Unix socket at `path` whose peer is `uid`/`gid`.
    package static func connect(
        path: String,
        uid: UInt32 = Self.nobody,
        gid: UInt32 = Self.nobody
    ) async throws -> LineConnection {
        let descriptor = try await Self.run(uid: uid, gid: gid) { try LineConnection.connectedDescriptor(path: path) }
        return LineConnection(adopting: descriptor)
    }

    // MARK: - Raw system calls

    #if arch(x86_64)
    private static let setgroupsNumber = 116
    private static let setresuidNumber = 117
    private static let setresgidNumber = 119
    #elseif arch(arm64)
    private static let setgroupsNumber = 159
    private static let setresuidNumber = 147
    private static let setresgidNumber = 149
    #endif

    private typealias Syscall = @convention(c) (Int, Int, Int, Int) -> Int

    /// `syscall(2)` is variadic, so Swift cannot call it directly; on Linux's calling conventions (x86-64, AArch64)
    /// a call with four integer arguments through a non-variadic pointer passes them the same way.
    private static let rawSyscall: Syscall? = dlsym(nil, "syscall").map {
        unsafeBitCast($0, to: Syscall.self)
    }

    private static func syscall(_ number: Int, _ first: Int, _ second: Int, _ third: Int) -> Int {
        Self.rawSyscall?(number, first, second, third) ?? -1
    }
}

extension OtherUser {
    /// Sends `lines` as `nobody` on one connection and returns every answer.
    ///
    /// socat gives up 0.5 s after its input ends unless told otherwise (`-t`); a login that hashes a password, or
    /// thousands of pipelined answers, can take longer than that on a loaded machine, so it waits up to a minute for
    /// the daemon to answer everything and close.
    package static func send(_ daemon: DaemonProcess, _ lines: [String]) async throws -> [JSONValue] {
        let output = try await runProcess(
            "/usr/bin/setpriv",
            [
                "--reuid=nobody", "--regid=nogroup", "--clear-groups", "/usr/bin/socat", "-t", "60", "-",
                "UNIX-CONNECT:\(daemon.socketPath)",
            ],
            stdin: lines.map { $0 + "\n" }.joined()
        )
        #expect(output.status == 0, "\(output.stderr)")
        let answers = try output.stdout.split(separator: "\n").map {
            try JSONDecoder().decode(JSONValue.self, from: Data($0.utf8))
        }
        try #require(answers.count == lines.count, "\(answers.count) answers to \(lines.count) requests")
        return answers
    }
}
