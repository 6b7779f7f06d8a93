import ArgumentParser
import Foundation
import Synchronization
import UsherClient

/// `usher-load`: holds many connections to a running usherd, some subscribed, while others pipeline reads and token
/// requests and a few switch users; checks that every request is answered and every subscriber sees every event in
/// order, and reports throughput, latency and the daemon's memory. `make load` starts a daemon and runs it.
@main
struct UsherLoad: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "usher-load",
        abstract: "Load test for usherd: many connections, subscribers, pipelined reads, switches."
    )

    @Option(help: "The daemon's socket.") var socket: String
    @Option(help: "The daemon's pid, to sample its memory (VmRSS).") var pid: Int32?
    @Option(help: "Connections held open at once.") var connections = 1000
    @Option(help: "How many of them subscribe to events.") var subscribers = 100
    @Option(help: "How many of them switch users.") var switchers = 3
    @Option(help: "Requests in flight at once on each reading connection (pipelining).") var pipeline = 4
    @Option(help: "Seconds of load.") var seconds = 10

    final class Figures: Sendable {
        let latencies = Mutex<[Double]>([])
        let errors = Mutex<[String]>([])
        let switches = Atomic<Int>(0)
        let stop = Atomic<Bool>(false)
        let finalGeneration = Atomic<Int64>(-1)
        let subscriberResults = Mutex<[(count: Int, inOrder: Bool)]>([])
        let rssPeak = Atomic<Int>(0)
        let opened = Atomic<Int>(0)
        let ready = Atomic<Int>(0)
    }

    func run() async throws {
        let socket = self.socket
        let users = try await Self.prepareUsers(socket: socket)
        let figures = Figures()
        let rssBefore = self.rss()
        let readers = self.connections - self.subscribers - self.switchers
        precondition(readers > 0, "--connections must exceed --subscribers + --switchers")
        let started = ContinuousClock.now
        var subscribedAt: Int64 = 0

        try await withThrowingTaskGroup(of: Void.self) { group in
            // Subscribers: each counts active_user_changed events and checks their generations only grow.
            let subscriberCount = self.subscribers
            for _ in 0..<subscriberCount {
                group.addTask {
                    try await Self.connected(socket) { client in
                        figures.opened.add(1, ordering: .relaxed)
                        let subscription = try await client.subscribe(events: [.activeUserChanged])
                        figures.ready.add(1, ordering: .relaxed)
                        var count = 0
                        var last = subscription.generation
                        var inOrder = true
                        for await event in client.events {
                            count += 1
                            if event.generation <= last { inOrder = false }
                            last = event.generation
                            let final = figures.finalGeneration.load(ordering: .relaxed)
                            if final >= 0, last >= final { break }
                        }
                        figures.subscriberResults.withLock { $0.append((count, inOrder)) }
                    }
                }
            }
            while figures.ready.load(ordering: .relaxed) < subscriberCount {
                try await Task.sleep(for: .milliseconds(10))
            }
            subscribedAt = try await UsherClient.withConnection(socketPath: socket) {
                try await $0.currentUser().generation
            }

            // Readers: pipelined current_user and access_token, timed.
            for index in 0..<readers {
                let pipeline = self.pipeline
                group.addTask {
                    try await Self.connected(socket) { client in
                        figures.opened.add(1, ordering: .relaxed)
                        try await withThrowingTaskGroup(of: Void.self) { lanes in
                            for lane in 0..<pipeline {
                                lanes.addTask {
                                    var round = 0
                                    while !figures.stop.load(ordering: .relaxed) {
                                        let start = ContinuousClock.now
                                        do {
                                            if (index + lane + round).isMultiple(of: 2) {
                                                _ = try await client.currentUser()
                                            } else {
                                                _ = try await client.accessToken(userID: nil, minValid: 60)
                                            }
                                            let elapsed = ContinuousClock.now - start
                                            let milliseconds =
                                                Double(elapsed.components.attoseconds) / 1e15
                                                + Double(elapsed.components.seconds) * 1000
                                            figures.latencies.withLock { $0.append(milliseconds) }
                                        } catch {
                                            figures.errors.withLock { $0.append("\(error)") }
                                        }
                                        round += 1
                                    }
                                }
                            }
                            try await lanes.waitForAll()
                        }
                    }
                }
            }
            // Switchers: move the active user around.
            let switcherCount = self.switchers
            for index in 0..<switcherCount {
                group.addTask {
                    try await Self.connected(socket) { client in
                        figures.opened.add(1, ordering: .relaxed)
                        var round = index
                        while !figures.stop.load(ordering: .relaxed) {
                            do {
                                _ = try await client.switchUser(id: users[round % users.count], ifGeneration: nil)
                                figures.switches.add(1, ordering: .relaxed)
                            } catch {
                                figures.errors.withLock { $0.append("switch: \(error)") }
                            }
                            round += 1
                            try await Task.sleep(for: .milliseconds(20))
                        }
                    }
                }
            }
            // The clock, the memory sampler, then the end.
            let deadline = ContinuousClock.now + .seconds(self.seconds)
            while ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(200))
                let rss = self.rss() ?? 0
                if rss > figures.rssPeak.load(ordering: .relaxed) { figures.rssPeak.store(rss, ordering: .relaxed) }
            }
            figures.stop.store(true, ordering: .relaxed)
            // Let the last switches land, then tell subscribers where the stream ends.
            try await Task.sleep(for: .milliseconds(200))
            let final = try await UsherClient.withConnection(socketPath: socket) {
                try await $0.currentUser().generation
            }
            figures.finalGeneration.store(final, ordering: .relaxed)
            // Nudge subscribers that already saw the last event before `final` was published.
            if let next = users.first {
                _ = try? await UsherClient.withConnection(socketPath: socket) {
                    try await $0.switchUser(id: next, ifGeneration: nil)
                }
                _ = try? await UsherClient.withConnection(socketPath: socket) {
                    try await $0.switchUser(id: users[1], ifGeneration: nil)
                }
            }
            try await group.waitForAll()
        }

        let elapsed = Double((ContinuousClock.now - started).components.seconds)
        let latencies = figures.latencies.withLock { $0.sorted() }
        let errors = figures.errors.withLock { $0 }
        let results = figures.subscriberResults.withLock { $0 }
        let expected = Int(figures.finalGeneration.load(ordering: .relaxed) - subscribedAt)
        func percentile(_ p: Double) -> String {
            guard !latencies.isEmpty else { return "-" }
            return String(format: "%.2f ms", latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))])
        }
        let counts = results.map(\.count)
        print(
            "usher-load: \(figures.opened.load(ordering: .relaxed)) connections (\(self.subscribers) subscribed, \(readers) reading with \(self.pipeline) in flight each, \(self.switchers) switching) for \(self.seconds) s"
        )
        print(
            "  requests answered   \(latencies.count) (\(String(format: "%.0f", Double(latencies.count) / max(1, Double(self.seconds))))/s), errors \(errors.count)"
        )
        print(
            "  latency             p50 \(percentile(0.5)), p90 \(percentile(0.9)), p99 \(percentile(0.99)), max \(percentile(1.0))"
        )
        print(
            "  switches            \(figures.switches.load(ordering: .relaxed)); generations \(subscribedAt)...\(figures.finalGeneration.load(ordering: .relaxed))"
        )
        print(
            "  subscribers         \(results.count) finished; events each min \(counts.min() ?? 0), max \(counts.max() ?? 0), expected at least \(expected); out of order: \(results.filter { !$0.inOrder }.count)"
        )
        if let before = rssBefore {
            print(
                "  daemon memory (RSS) before \(before / 1024) MiB, peak \(figures.rssPeak.load(ordering: .relaxed) / 1024) MiB, after \((self.rss() ?? 0) / 1024) MiB"
            )
        }
        print("  wall time           \(Int(elapsed)) s")
        let failures = [
            errors.isEmpty ? nil : "\(errors.count) requests failed (first: \(errors[0]))",
            results.count == self.subscribers ? nil : "only \(results.count) subscribers finished",
            results.allSatisfy(\.inOrder) ? nil : "events out of order",
            (counts.min() ?? 0) >= expected ? nil : "a subscriber missed events (\(counts.min() ?? 0) < \(expected))",
        ].compactMap { $0 }
        guard failures.isEmpty else {
            for failure in failures { print("FAIL: \(failure)") }
            throw ExitCode.failure
        }
        print("OK")
    }

    /// Connects, retrying briefly while the daemon's accept queue is full (EAGAIN), as any client should under a
    /// burst; then runs `body`.
    static func connected<T: Sendable>(
        _ socket: String,
        _ body: @Sendable (UsherClient) async throws -> T
    ) async throws -> T {
        var attempt = 0
        while true {
            do {
                return try await UsherClient.withConnection(socketPath: socket) { try await body($0) }
            } catch UsherClientError.cannotConnect(_, let failure) where attempt < 50 {
                attempt += 1
                _ = failure
                try await Task.sleep(for: .milliseconds(20 * attempt))
            }
        }
    }

    /// Three logged-in users to switch between.
    static func prepareUsers(socket: String) async throws -> [String] {
        try await Self.connected(socket) { client in
            var ids: [String] = []
            for index in 0..<2 {
                let email = "load\(index)-\(UInt32.random(in: 0...UInt32.max))@example.com"
                _ = try await client.register(provider: nil, email: email, password: "load-test-password")
                ids.append(try await client.login(.emailPassword(email: email, password: "load-test-password")).user.id)
            }
            ids.append(try await client.login(.anonymous()).user.id)
            return ids
        }
    }

    /// The daemon's resident memory in KiB.
    func rss() -> Int? {
        guard let pid, let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
        else { return nil }
        return Int(line.split(separator: " ").dropFirst().first ?? "")
    }
}
