/// A bounded map in two generations: O(1) lookups and inserts, and when `current` holds half the capacity it becomes
/// `previous` (dropping the old `previous`), so the entries dropped are those least recently touched. Entries taken
/// from `previous` are moved forward when they are put back.
struct GenerationTable<Key: Hashable, Value> {
    var current: [Key: Value] = [:]
    var previous: [Key: Value] = [:]

    /// The value, moved out of `previous` (the caller puts it back, into `current`).
    mutating func take(_ key: Key) -> Value? {
        if let value = self.current[key] { return value }
        return self.previous.removeValue(forKey: key)
    }

    /// The value, where it is.
    func get(_ key: Key) -> Value? {
        self.current[key] ?? self.previous[key]
    }

    mutating func put(_ key: Key, _ value: Value, capacity: Int) {
        if self.current[key] == nil, self.current.count >= max(1, capacity / 2) {
            self.previous = self.current
            self.current = [:]
        }
        self.previous.removeValue(forKey: key)
        self.current[key] = value
    }

    mutating func remove(_ key: Key) {
        self.current.removeValue(forKey: key)
        self.previous.removeValue(forKey: key)
    }

    var count: Int { self.current.count + self.previous.count }
}
