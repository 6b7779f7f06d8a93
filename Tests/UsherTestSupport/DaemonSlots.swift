import Foundation

/// Bounds how many `usherd` processes the test run keeps alive at once.
///
/// Swift Testing starts every test at once; without a bound, dozens of daemons start together on a 2-core machine
/// and each test's waits stretch until hang guards fire. A daemon takes a slot when it starts and gives it back when
/// it stops; further starts queue in arrival order.
///
/// A test that runs two daemons side by side holds two slots. So that such tests can never wait on each other in a
/// cycle, a start that has queued for `overflowAfter` goes ahead without a slot: the bound is a way to share the
/// machine, not a correctness condition, and oversubscribing for a moment is always safe.
package actor DaemonSlots {
    package static let shared = DaemonSlots(
        capacity: max(4, 2 * ProcessInfo.processInfo.activeProcessorCount),
        overflowAfter: .seconds(20)
    )

    private let capacity: Int
    private let overflowAfter: Duration
    private var inUse = 0
    private var waiters: [(id: UInt64, continuation: CheckedContinuation<Bool, Never>)] = []
    private var nextWaiterID: UInt64 = 0

    init(capacity: Int, overflowAfter: Duration) {
        self.capacity = capacity
        self.overflowAfter = overflowAfter
    }

    /// Waits for a slot. Returns whether one was taken (false: the wait overflowed, and nothing must be released).
    package func acquire() async -> Bool {
        if self.inUse < self.capacity {
            self.inUse += 1
            return true
        }
        let id = self.nextWaiterID
        self.nextWaiterID += 1
        let overflowAfter = self.overflowAfter
        return await withTaskGroup(of: Void.self) { group in
            group.addTask {
                try? await Task.sleep(for: overflowAfter)
                await self.overflow(id)
            }
            let taken = await withCheckedContinuation { continuation in
                self.waiters.append((id, continuation))
            }
            group.cancelAll()
            return taken
        }
    }

    /// Gives a slot back: the longest waiter gets it.
    package func release() {
        if self.waiters.isEmpty {
            self.inUse -= 1
        } else {
            self.waiters.removeFirst().continuation.resume(returning: true)
        }
    }

    private func overflow(_ id: UInt64) {
        guard let index = self.waiters.firstIndex(where: { $0.id == id }) else { return }
        self.waiters.remove(at: index).continuation.resume(returning: false)
    }
}
