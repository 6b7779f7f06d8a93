import UsherProtocol

/// A min-heap of keys by priority, with replace and remove in O(log n) amortised.
///
/// Re-prioritising a key pushes a new entry and marks the old one stale (lazy deletion); stale entries are skipped
/// when they reach the top, and the heap is rebuilt when they outnumber live ones, so memory stays proportional to the
/// number of live keys. The daemon keeps its token deadlines in one (`DeadlineHeap`, earliest first).
package struct IndexedHeap<Priority: Comparable & Sendable>: Sendable {
    private struct Entry: Sendable {
        var priority: Priority
        var sequence: UInt64
        var key: String
    }

    /// A live key's priority and the sequence of its entry in `heap` (entries with another sequence are stale).
    private struct Live: Sendable {
        var priority: Priority
        var sequence: UInt64
    }

    private var heap: [Entry] = []
    private var live: [String: Live] = [:]
    private var nextSequence: UInt64 = 0

    package init() {}

    /// Makes room for `count` keys (loading schedules every logged-in user in one go).
    package mutating func reserveCapacity(_ count: Int) {
        self.heap.reserveCapacity(count)
        self.live.reserveCapacity(count)
    }

    /// The number of live keys.
    package var count: Int { self.live.count }

    package func priority(of key: String) -> Priority? { self.live[key]?.priority }

    /// The live key with the smallest priority, and that priority.
    package mutating func top() -> (key: String, priority: Priority)? {
        self.dropStaleTop()
        return self.heap.first.map { ($0.key, $0.priority) }
    }

    /// Sets (or replaces) the key's priority.
    package mutating func insert(_ key: String, priority: Priority) {
        self.nextSequence += 1
        let entry = Entry(priority: priority, sequence: self.nextSequence, key: key)
        self.live[key] = Live(priority: priority, sequence: entry.sequence)
        self.push(entry)
        self.compactIfSparse()
    }

    package mutating func remove(_ key: String) {
        guard self.live.removeValue(forKey: key) != nil else { return }
        self.compactIfSparse()
    }

    /// Removes and returns the top key if `isDue` says its priority has come.
    package mutating func popTop(if isDue: (Priority) -> Bool) -> String? {
        self.dropStaleTop()
        guard let top = self.heap.first, isDue(top.priority) else { return nil }
        self.popHeapTop()
        self.live.removeValue(forKey: top.key)
        return top.key
    }

    private func isLive(_ entry: Entry) -> Bool { self.live[entry.key]?.sequence == entry.sequence }

    private mutating func dropStaleTop() {
        while let top = self.heap.first, !self.isLive(top) { self.popHeapTop() }
    }

    private mutating func compactIfSparse() {
        guard self.heap.count > 64, self.heap.count > 2 * self.live.count else { return }
        // A sorted array is a valid min-heap.
        self.heap = self.live.map { Entry(priority: $0.value.priority, sequence: $0.value.sequence, key: $0.key) }
            .sorted(by: Self.before)
    }

    private static func before(_ a: Entry, _ b: Entry) -> Bool {
        a.priority != b.priority ? a.priority < b.priority : a.sequence < b.sequence
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

    private mutating func popHeapTop() {
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
}

/// Every user's next token deadline, earliest first.
package typealias DeadlineHeap = IndexedHeap<Timestamp>

extension IndexedHeap where Priority == Timestamp {
    package func deadline(for userID: String) -> Timestamp? { self.priority(of: userID) }

    /// The earliest live deadline.
    package mutating func earliest() -> Timestamp? { self.top()?.priority }

    /// Sets (or replaces) the user's deadline.
    package mutating func schedule(_ userID: String, at deadline: Timestamp) { self.insert(userID, priority: deadline) }

    package mutating func cancel(_ userID: String) { self.remove(userID) }

    /// Removes and returns the user with the earliest deadline if it is at or before `now`.
    package mutating func popDue(now: Timestamp) -> String? { self.popTop { $0 <= now } }
}
