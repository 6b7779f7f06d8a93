/// Everything the store throws of its own. SQLite's failures carry SQLite's message, which names tables, columns and
/// constraints but never a value: every value reaches SQLite bound to a statement, never in its text.
package enum StoreError: Error, CustomStringConvertible {
    case cannotOpen(path: String, reason: String)
    case tokenKey(path: String, reason: String)
    case tokensEncrypted
    case wrongTokenKey
    /// A `SessionChange` carried a pending write of a type this store does not know (a programming error).
    case unsupportedWrite(String)
    /// SQLite refused a statement: its extended result code and its message.
    case sqlite(code: Int32, message: String)
    /// A column read as a non-optional value held NULL (a row the schema should not allow).
    case unexpectedNull(column: String)
    /// The database was migrated by a later version of usherd, past `target`, the newest migration asked for.
    case migratedBeyond(target: String)

    package var description: String {
        switch self {
        case .cannotOpen(let path, let reason): "cannot open database \(path): \(reason)"
        case .tokenKey(let path, let reason): "token encryption key \(path): \(reason)"
        case .tokensEncrypted:
            "the stored tokens are encrypted, but no daemon.token_encryption_key is configured"
        case .wrongTokenKey: "the stored tokens cannot be decrypted with the configured daemon.token_encryption_key"
        case .unsupportedWrite(let type): "the database cannot perform a pending write of type \(type)"
        case .sqlite(let code, let message): "SQLite error \(code): \(message)"
        case .unexpectedNull(let column): "the database holds NULL in column \(column), which cannot be empty"
        case .migratedBeyond(let target): "the database is migrated beyond migration \(target)"
        }
    }
}
