import CSQLite

/// A prepared statement: bind its parameters, step through its rows, read their columns.
///
/// Belongs to one `Connection` and is used on that connection's thread only; finalized when the last reference goes.
package final class Statement {
    let handle: OpaquePointer
    /// The connection's handle, for its error messages.
    private let database: OpaquePointer
    /// Column names to indexes, made at the first lookup by name.
    private var columnIndexes: [String: Int32]? = nil

    init(database: OpaquePointer, sql: String, persistent: Bool) throws(StoreError) {
        var handle: OpaquePointer? = nil
        let flags = persistent ? UInt32(SQLITE_PREPARE_PERSISTENT) : 0
        let code = usher_sqlite3_prepare_v3(database, sql, -1, flags, &handle, nil)
        guard code == SQLITE_OK, let handle else {
            usher_sqlite3_finalize(handle)
            throw Connection.error(code, database)
        }
        self.handle = handle
        self.database = database
    }

    deinit {
        usher_sqlite3_finalize(self.handle)
    }

    /// Makes a statement ready to run again with new arguments: resets it and binds `arguments` to `?1`, `?2`, ...
    package func bind(_ arguments: [any SQLArgument]) throws(StoreError) {
        self.reset()
        usher_sqlite3_clear_bindings(self.handle)
        for (offset, argument) in arguments.enumerated() {
            try argument.bind(to: self, at: Int32(offset + 1))
        }
    }

    /// Binds one value to the parameter `:name` (or `@name`, `$name`: `name` includes its sigil).
    package func bind(_ argument: some SQLArgument, named name: String) throws(StoreError) {
        let index = usher_sqlite3_bind_parameter_index(self.handle, name)
        guard index > 0 else { throw .sqlite(code: SQLITE_RANGE, message: "no parameter named \(name)") }
        try argument.bind(to: self, at: index)
    }

    /// Steps to the next row: true when there is one, false when the statement is done.
    package func step() throws(StoreError) -> Bool {
        let code = usher_sqlite3_step(self.handle)
        switch code {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            // sqlite3_reset returns the error again; the message is the connection's.
            let error = Connection.error(code, self.database)
            usher_sqlite3_reset(self.handle)
            throw error
        }
    }

    /// Runs the statement to its end with `arguments`, ignoring any rows.
    package func run(_ arguments: [any SQLArgument] = []) throws(StoreError) {
        try self.bind(arguments)
        defer { self.reset() }
        while try self.step() {}
    }

    /// Ends a run early, releasing the statement's read lock; binding again resets too.
    package func reset() {
        usher_sqlite3_reset(self.handle)
    }

    /// Whether the statement has stepped and not been reset: it must not be handed out again meanwhile.
    var isBusy: Bool { usher_sqlite3_stmt_busy(self.handle) != 0 }

    // MARK: Columns of the current row

    package var columnCount: Int32 { usher_sqlite3_column_count(self.handle) }

    package func columnName(at index: Int32) -> String {
        usher_sqlite3_column_name(self.handle, index).map { String(cString: $0) } ?? ""
    }

    package func columnIndex(named name: String) throws(StoreError) -> Int32 {
        if self.columnIndexes == nil {
            var indexes: [String: Int32] = [:]
            for index in 0..<self.columnCount { indexes[self.columnName(at: index)] = index }
            self.columnIndexes = indexes
        }
        guard let index = self.columnIndexes?[name] else {
            throw .sqlite(code: SQLITE_RANGE, message: "no column named \(name)")
        }
        return index
    }

    package func isNull(at index: Int32) -> Bool {
        usher_sqlite3_column_type(self.handle, index) == SQLITE_NULL
    }

    package func int64(at index: Int32) throws(StoreError) -> Int64 { try Int64.read(from: self, at: index) }
    package func double(at index: Int32) throws(StoreError) -> Double { try Double.read(from: self, at: index) }
    package func string(at index: Int32) throws(StoreError) -> String? { try String?.read(from: self, at: index) }
    package func blob(at index: Int32) throws(StoreError) -> [UInt8]? { try [UInt8]?.read(from: self, at: index) }

    /// Throws when the column is NULL: for reads of non-optional values.
    func requireValue(at index: Int32) throws(StoreError) {
        if self.isNull(at: index) { throw .unexpectedNull(column: self.columnName(at: index)) }
    }

    /// Maps a result code of a bind to an error.
    func check(_ code: Int32) throws(StoreError) {
        guard code == SQLITE_OK else { throw Connection.error(code, self.database) }
    }
}

/// The current row of a statement, read by column index (cheapest: the order of the `SELECT`) or by name.
///
/// Valid only inside the closure it is handed to: the next step replaces the row.
package struct Row {
    package let statement: Statement

    package subscript<Value: SQLColumn>(_ index: Int32) -> Value {
        get throws(StoreError) { try Value.read(from: self.statement, at: index) }
    }

    package subscript<Value: SQLColumn>(_ name: String) -> Value {
        get throws(StoreError) { try Value.read(from: self.statement, at: self.statement.columnIndex(named: name)) }
    }
}
