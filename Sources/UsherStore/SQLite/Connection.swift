import CSQLite

/// One SQLite connection: statements, transactions, and the errors SQLite reports, as `StoreError`s.
///
/// Not thread-safe by itself (it is opened without SQLite's mutexes): `DatabaseWriter` uses it on one serial queue,
/// and tests and migrations use it from one thread.
package final class Connection {
    let handle: OpaquePointer
    private var isClosed = false
    /// Prepared statements by their SQL, kept for the connection's life (the store runs a few dozen distinct ones).
    private var cache: [String: Statement] = [:]
    /// Past this many cached statements the cache is emptied: only updates of a user's changed columns are built
    /// from column names at run time, and their combinations are many in theory, few in practice.
    private static let cacheLimit = 256

    /// Opens (creating when needed) the database at `path`, or an in-memory database at `":memory:"`.
    ///
    /// - Parameter busyTimeout: how long a statement waits for another connection's lock before failing with
    ///   `SQLITE_BUSY`, in milliseconds.
    package init(path: String, busyTimeout: Int32 = 10_000) throws(StoreError) {
        var handle: OpaquePointer? = nil
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        let code = usher_sqlite3_open_v2(path, &handle, flags, nil)
        guard code == SQLITE_OK, let handle else {
            let reason =
                handle.map { String(cString: usher_sqlite3_errmsg($0)) } ?? String(cString: usher_sqlite3_errstr(code))
            usher_sqlite3_close_v2(handle)
            throw .cannotOpen(path: path, reason: reason)
        }
        self.handle = handle
        usher_sqlite3_busy_timeout(handle, busyTimeout)
        // As GRDB had them: foreign keys enforced (`local_account_token` goes with its account).
        try self.execute(sql: "PRAGMA foreign_keys = ON")
    }

    deinit {
        self.close()
    }

    /// Closes the connection now rather than when the last reference goes (nothing may use it afterwards).
    package func close() {
        guard !self.isClosed else { return }
        self.isClosed = true
        // Finalizes the cached statements (`Statement.deinit`) first; close_v2 waits for any still held elsewhere.
        self.cache.removeAll()
        usher_sqlite3_close_v2(self.handle)
    }

    static func error(_ code: Int32, _ database: OpaquePointer?) -> StoreError {
        let message =
            database.map { String(cString: usher_sqlite3_errmsg($0)) } ?? String(cString: usher_sqlite3_errstr(code))
        return .sqlite(code: code, message: message)
    }

    // MARK: Statements

    /// Runs SQL text that binds no values: schema changes, pragmas, `BEGIN`/`COMMIT`. Several statements may be
    /// separated by semicolons.
    package func execute(sql: String) throws(StoreError) {
        let code = usher_sqlite3_exec(self.handle, sql, nil, nil, nil)
        guard code == SQLITE_OK else { throw Self.error(code, self.handle) }
    }

    /// Runs one statement with its values bound to `?1`, `?2`, ...
    package func execute(sql: String, arguments: [any SQLArgument]) throws(StoreError) {
        try self.statement(sql: sql).run(arguments)
    }

    /// The prepared statement for `sql`, from the cache (prepared and cached the first time).
    package func statement(sql: String) throws(StoreError) -> Statement {
        if let cached = self.cache[sql], !cached.isBusy { return cached }
        // The cached one is in use further up the stack (a query inside a loop over its own rows): a statement of its
        // own, used once and finalized when dropped.
        if self.cache[sql] != nil { return try Statement(database: self.handle, sql: sql, persistent: false) }
        let statement = try Statement(database: self.handle, sql: sql, persistent: true)
        if self.cache.count >= Self.cacheLimit { self.cache.removeAll(keepingCapacity: true) }
        self.cache[sql] = statement
        return statement
    }

    /// Rows changed by the last `INSERT`, `UPDATE` or `DELETE`.
    package var changesCount: Int { Int(usher_sqlite3_changes64(self.handle)) }

    // MARK: Queries

    /// Calls `body` with each row of the query, in order.
    package func forEach(
        sql: String,
        arguments: [any SQLArgument] = [],
        _ body: (Row) throws -> Void
    ) throws {
        let statement = try self.statement(sql: sql)
        try statement.bind(arguments)
        defer { statement.reset() }
        while try statement.step() { try body(Row(statement: statement)) }
    }

    package func fetchAll<Value>(
        sql: String,
        arguments: [any SQLArgument] = [],
        _ decode: (Row) throws -> Value
    ) throws -> [Value] {
        var values: [Value] = []
        try self.forEach(sql: sql, arguments: arguments) { values.append(try decode($0)) }
        return values
    }

    /// The first row decoded, or nil when there is none.
    package func fetchOne<Value>(
        sql: String,
        arguments: [any SQLArgument] = [],
        _ decode: (Row) throws -> Value
    ) throws -> Value? {
        let statement = try self.statement(sql: sql)
        try statement.bind(arguments)
        defer { statement.reset() }
        return try statement.step() ? decode(Row(statement: statement)) : nil
    }

    /// The first column of the first row; nil when there is no row or it holds NULL.
    package func fetchOne<Value: SQLColumn>(
        _ type: Value.Type,
        sql: String,
        arguments: [any SQLArgument] = []
    ) throws -> Value? {
        try self.fetchOne(sql: sql, arguments: arguments) { row throws(StoreError) in try row[0] as Value? } ?? nil
    }

    /// The first column of every row.
    package func fetchAll<Value: SQLColumn>(
        _ type: Value.Type,
        sql: String,
        arguments: [any SQLArgument] = []
    ) throws -> [Value] {
        try self.fetchAll(sql: sql, arguments: arguments) { row throws(StoreError) in try row[0] as Value }
    }

    /// The names of a table's columns, in the table's order.
    package func columns(in table: String) throws -> [String] {
        try self.fetchAll(sql: "SELECT name FROM pragma_table_info(?) ORDER BY cid", arguments: [table]) {
            try $0[0] as String
        }
    }

    // MARK: Transactions

    package enum TransactionKind: String {
        /// Takes the write lock at once: a writer never fails half-way for want of it.
        case immediate = "IMMEDIATE"
        /// Takes locks as statements need them: a read sees one snapshot from its first read to its end.
        case deferred = "DEFERRED"
    }

    /// Runs `body` in a transaction: committed when it returns, rolled back when it (or the commit) throws, and the
    /// error rethrown as it was.
    package func transaction<Value>(_ kind: TransactionKind = .immediate, _ body: () throws -> Value) throws -> Value {
        try self.execute(sql: "BEGIN \(kind.rawValue)")
        do {
            let value = try body()
            try self.execute(sql: "COMMIT")
            return value
        } catch {
            // SQLite may have rolled back already (some errors end the transaction); then there is nothing to undo.
            if usher_sqlite3_get_autocommit(self.handle) == 0 { try? self.execute(sql: "ROLLBACK") }
            throw error
        }
    }
}
