import OrderedCollections
import UsherProtocol

/// A min-heap of keys by priority, with replace and remove in O(log n).
///
/// An indexed binary heap: `keys` holds the keys in heap order and `slots` their priorities at the same positions.
/// The keys are an `OrderedSet` because it also finds a key's position (a hash table of positions, a few bits each,
/// beside the array), so nothing holds a key twice and no entry goes stale: with 100,000 keys the heap takes about
/// 4 MB, where entries beside a dictionary of live keys took 12. Equal priorities leave in the order they were set.
/// The daemon keeps its token deadlines in one (`DeadlineHeap`, earliest first).
package struct IndexedHeap<Priority: Comparable & Sendable>: Sendable {
    private struct Slot: Sendable {
        var priority: Priority
        /// When the priority was set: the order among equal priorities.
        var sequence: UInt64
    }

    private var keys: OrderedSet<String> = []
    private var slots: [Slot] = []
    private var nextSequence: UInt64 = 0

    package init() {}

    /// Makes room for `count` keys (loading schedules every logged-in user in one go).
    package mutating func reserveCapacity(_ count: Int) {
        self.keys.reserveCapacity(count)
        self.slots.reserveCapacity(count)
    }

    /// The number of keys.
    package var count: Int { self.keys.count }

    package func priority(of key: String) -> Priority? {
        self.keys.firstIndex(of: key).map { self.slots[$0].priority }
    }

    /// The key with the smallest priority, and that priority.
    package func top() -> (key: String, priority: Priority)? {
        self.keys.first.map { ($0, self.slots[0].priority) }
    }

    /// Sets (or replaces) the key's priority.
    package mutating func insert(_ key: String, priority: Priority) {
        self.nextSequence += 1
        let slot = Slot(priority: priority, sequence: self.nextSequence)
        let (inserted, index) = self.keys.append(key)
        if inserted {
            self.slots.append(slot)
            self.siftUp(index)
        } else {
            self.slots[index] = slot
            self.siftDown(self.siftUp(index))
        }
    }

    package mutating func remove(_ key: String) {
        guard let index = self.keys.firstIndex(of: key) else { return }
        self.removeEntry(at: index)
    }

    /// Removes and returns the top key if `isDue` says its priority has come.
    package mutating func popTop(if isDue: (Priority) -> Bool) -> String? {
        guard let top = self.top(), isDue(top.priority) else { return nil }
        self.removeEntry(at: 0)
        return top.key
    }

    /// Moves the last entry into the place of the one at `index`, then to where it belongs.
    private mutating func removeEntry(at index: Int) {
        self.swapEntries(index, self.slots.count - 1)
        self.keys.removeLast()
        self.slots.removeLast()
        if index < self.slots.count { self.siftDown(self.siftUp(index)) }
    }

    private mutating func swapEntries(_ i: Int, _ j: Int) {
        self.keys.swapAt(i, j)
        self.slots.swapAt(i, j)
    }

    private func before(_ i: Int, _ j: Int) -> Bool {
        let a = self.slots[i]
        let b = self.slots[j]
        return a.priority != b.priority ? a.priority < b.priority : a.sequence < b.sequence
    }

    /// Moves the entry at `index` up while it comes before its parent; returns where it ends.
    @discardableResult
    private mutating func siftUp(_ index: Int) -> Int {
        var child = index
        while child > 0 {
            let parent = (child - 1) / 2
            guard self.before(child, parent) else { break }
            self.swapEntries(child, parent)
            child = parent
        }
        return child
    }

    /// Moves the entry at `index` down while a child comes before it.
    private mutating func siftDown(_ index: Int) {
        var parent = index
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var first = parent
            if left < self.slots.count, self.before(left, first) { first = left }
            if right < self.slots.count, self.before(right, first) { first = right }
            if first == parent { break }
            self.swapEntries(parent, first)
            parent = first
        }
    }
}

/// Every user's next token deadline, earliest first.
package typealias DeadlineHeap = IndexedHeap<Timestamp>

extension IndexedHeap where Priority == Timestamp {
    package func deadline(for userID: String) -> Timestamp? { self.priority(of: userID) }

    /// The earliest deadline.
    package func earliest() -> Timestamp? { self.top()?.priority }

    /// Sets (or replaces) the user's deadline.
    package mutating func schedule(_ userID: String, at deadline: Timestamp) { self.insert(userID, priority: deadline) }

    package mutating func cancel(_ userID: String) { self.remove(userID) }

    /// Removes and returns the user with the earliest deadline if it is at or before `now`.
    package mutating func popDue(now: Timestamp) -> String? { self.popTop { $0 <= now } }
}
