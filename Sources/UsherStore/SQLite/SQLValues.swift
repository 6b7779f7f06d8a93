import CSQLite

/// A value a statement binds to a parameter. Every value reaches SQLite this way: never in the text of a statement.
package protocol SQLArgument: Sendable {
    func bind(to statement: Statement, at index: Int32) throws(StoreError)
}

/// A value read from a column of the current row.
package protocol SQLColumn {
    /// Reads the column; NULL is an error for every type but `Optional`.
    static func read(from statement: Statement, at index: Int32) throws(StoreError) -> Self
}

extension Int64: SQLArgument, SQLColumn {
    package func bind(to statement: Statement, at index: Int32) throws(StoreError) {
        try statement.check(usher_sqlite3_bind_int64(statement.handle, index, self))
    }

    package static func read(from statement: Statement, at index: Int32) throws(StoreError) -> Int64 {
        try statement.requireValue(at: index)
        return usher_sqlite3_column_int64(statement.handle, index)
    }
}

extension Int: SQLArgument, SQLColumn {
    package func bind(to statement: Statement, at index: Int32) throws(StoreError) {
        try Int64(self).bind(to: statement, at: index)
    }

    package static func read(from statement: Statement, at index: Int32) throws(StoreError) -> Int {
        Int(truncatingIfNeeded: try Int64.read(from: statement, at: index))
    }
}

/// Stored as 0 or 1, as GRDB stored it (SQLite has no boolean type).
extension Bool: SQLArgument, SQLColumn {
    package func bind(to statement: Statement, at index: Int32) throws(StoreError) {
        try Int64(self ? 1 : 0).bind(to: statement, at: index)
    }

    package static func read(from statement: Statement, at index: Int32) throws(StoreError) -> Bool {
        try Int64.read(from: statement, at: index) != 0
    }
}

extension Double: SQLArgument, SQLColumn {
    package func bind(to statement: Statement, at index: Int32) throws(StoreError) {
        try statement.check(usher_sqlite3_bind_double(statement.handle, index, self))
    }

    package static func read(from statement: Statement, at index: Int32) throws(StoreError) -> Double {
        try statement.requireValue(at: index)
        return usher_sqlite3_column_double(statement.handle, index)
    }
}

extension String: SQLArgument, SQLColumn {
    package func bind(to statement: Statement, at index: Int32) throws(StoreError) {
        // `withCString` never hands a null pointer (which SQLite would bind as NULL), even for "".
        let bytes = Int32(self.utf8.count)
        try statement.check(self.withCString { usher_sqlite3_bind_text_copy(statement.handle, index, $0, bytes) })
    }

    package static func read(from statement: Statement, at index: Int32) throws(StoreError) -> String {
        try statement.requireValue(at: index)
        guard let text = usher_sqlite3_column_text(statement.handle, index) else { return "" }
        let count = Int(usher_sqlite3_column_bytes(statement.handle, index))
        return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
    }
}

/// A BLOB: hashes and keys.
extension [UInt8]: SQLArgument, SQLColumn {
    package func bind(to statement: Statement, at index: Int32) throws(StoreError) {
        // A null pointer would bind NULL: an empty array binds an empty blob.
        guard !self.isEmpty else {
            try statement.check(usher_sqlite3_bind_zeroblob(statement.handle, index, 0))
            return
        }
        try statement.check(
            self.withUnsafeBytes {
                usher_sqlite3_bind_blob_copy(statement.handle, index, $0.baseAddress, Int32($0.count))
            }
        )
    }

    package static func read(from statement: Statement, at index: Int32) throws(StoreError) -> [UInt8] {
        try statement.requireValue(at: index)
        let count = Int(usher_sqlite3_column_bytes(statement.handle, index))
        guard count > 0, let bytes = usher_sqlite3_column_blob(statement.handle, index) else { return [] }
        return Array(UnsafeRawBufferPointer(start: bytes, count: count))
    }
}

/// NULL when nil.
extension Optional: SQLArgument where Wrapped: SQLArgument {
    package func bind(to statement: Statement, at index: Int32) throws(StoreError) {
        switch self {
        case .some(let value): try value.bind(to: statement, at: index)
        case .none: try statement.check(usher_sqlite3_bind_null(statement.handle, index))
        }
    }
}

extension Optional: SQLColumn where Wrapped: SQLColumn {
    package static func read(from statement: Statement, at index: Int32) throws(StoreError) -> Wrapped? {
        if statement.isNull(at: index) { return nil }
        return try Wrapped.read(from: statement, at: index)
    }
}
