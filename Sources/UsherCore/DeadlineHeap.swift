import UsherProtocol

/// A min-heap of per-user deadlines with replace and cancel in O(log n) amortised.
///
/// Rescheduling a user pushes a new entry and marks the old one stale (lazy deletion); stale entries are skipped when
/// they reach the top, and the heap is rebuilt when they outnumber live ones, so memory stays proportional to the
/// number of scheduled users.
package struct DeadlineHeap: Sendable {
    private struct Entry: Sendable {
        var deadline: Timestamp
        var sequence: UInt64
        var userID: String
    }

    private var heap: [Entry] = []
    private var live: [String: Entry] = [:]
    private var nextSequence: UInt64 = 0

    package init() {}

    /// The number of users with a deadline.
    package var count: Int { self.live.count }

    package func deadline(for userID: String) -> Timestamp? { self.live[userID]?.deadline }

    /// The earliest live deadline.
    package mutating func earliest() -> Timestamp? {
        self.dropStaleTop()
        return self.heap.first?.deadline
    }

    /// Sets (or replaces) the user's deadline.
    package mutating func schedule(_ userID: String, at deadline: Timestamp) {
        self.nextSequence += 1
        let entry = Entry(deadline: deadline, sequence: self.nextSequence, userID: userID)
        self.live[userID] = entry
        self.push(entry)
        if self.heap.count > 64, self.heap.count > 2 * self.live.count { self.rebuild() }
    }

    package mutating func cancel(_ userID: String) {
        self.live.removeValue(forKey: userID)
        if self.heap.count > 64, self.heap.count > 2 * self.live.count { self.rebuild() }
    }

    /// Removes and returns the user with the earliest deadline if it is at or before `now`.
    package mutating func popDue(now: Timestamp) -> String? {
        self.dropStaleTop()
        guard let top = self.heap.first, top.deadline <= now else { return nil }
        self.popTop()
        self.live.removeValue(forKey: top.userID)
        return top.userID
    }

    private func isLive(_ entry: Entry) -> Bool { self.live[entry.userID]?.sequence == entry.sequence }

    private mutating func dropStaleTop() {
        while let top = self.heap.first, !self.isLive(top) { self.popTop() }
    }

    private static func before(_ a: Entry, _ b: Entry) -> Bool {
        a.deadline != b.deadline ? a.deadline < b.deadline : a.sequence < b.sequence
    }

    private mutating func push(_ entry: Entry) {
        self.heap.append(entry)
        var child = self.heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.before(self.heap[child], self.heap[parent]) else { break }
            self.heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func popTop() {
        let last = self.heap.removeLast()
        guard !self.heap.isEmpty else { return }
        self.heap[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < self.heap.count, Self.before(self.heap[left], self.heap[smallest]) { smallest = left }
            if right < self.heap.count, Self.before(self.heap[right], self.heap[smallest]) { smallest = right }
            if smallest == parent { break }
            self.heap.swapAt(parent, smallest)
            parent = smallest
        }
    }

    private mutating func rebuild() {
        let entries = self.live.values.sorted(by: Self.before)
        // A sorted array is a valid min-heap.
        self.heap = entries
    }
}
