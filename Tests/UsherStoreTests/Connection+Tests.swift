import UsherStore

/// What the tests do on a second connection to the daemon's file (as `sqlite3` would), in a transaction each.
extension Connection {
    func write<Value>(_ body: (Connection) throws -> Value) throws -> Value {
        try self.transaction(.immediate) { try body(self) }
    }

    func read<Value>(_ body: (Connection) throws -> Value) throws -> Value {
        try self.transaction(.deferred) { try body(self) }
    }
}
