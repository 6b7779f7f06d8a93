/// The users in the order they were added to the device (`list_users` order), for paging in O(log n + page).
///
/// Users are added with a generation higher than any before, so adding is an append. Removing marks the entry dead
/// (it is recognised by `isLive`, which the owner answers from its user table) instead of shifting the array; dead
/// entries are dropped in one pass once they outnumber live ones, so removal is O(1) amortised and memory stays
/// proportional to the number of users.
struct UserOrder: Sendable {
    struct Entry: Sendable {
        var addedGeneration: Int64
        var userID: String
    }

    private(set) var entries: [Entry] = []
    private var dead = 0

    /// Records a user added at `addedGeneration`.
    mutating func append(_ userID: String, addedGeneration: Int64) {
        let entry = Entry(addedGeneration: addedGeneration, userID: userID)
        if let last = self.entries.last, last.addedGeneration >= addedGeneration {
            // Not newer than every user before it (only a hand-edited database does this): keep the order anyway.
            self.entries.insert(entry, at: self.firstIndex(after: addedGeneration - 1))
        } else {
            self.entries.append(entry)
        }
    }

    /// Records that one entry died; compacts when dead entries outnumber live ones.
    mutating func markRemoved(isLive: (Entry) -> Bool) {
        self.dead += 1
        guard self.dead > 64, self.dead * 2 > self.entries.count else { return }
        self.entries.removeAll { !isLive($0) }
        self.dead = 0
    }

    /// The index of the first entry added after `addedGeneration` (binary search).
    func firstIndex(after addedGeneration: Int64) -> Int {
        var low = 0
        var high = self.entries.count
        while low < high {
            let middle = (low + high) / 2
            if self.entries[middle].addedGeneration <= addedGeneration {
                low = middle + 1
            } else {
                high = middle
            }
        }
        return low
    }
}
