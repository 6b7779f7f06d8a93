/// The schema's history as named steps, each run once, in order, in a transaction of its own.
///
/// The steps applied are recorded in `grdb_migrations(identifier TEXT NOT NULL PRIMARY KEY)`: the table and the
/// identifiers GRDB's `DatabaseMigrator` kept, so that a database an earlier usherd migrated with GRDB is upgraded
/// from where it is, and a database migrated here opens in that usherd. As GRDB did, each step runs with foreign keys
/// off and checks them (`PRAGMA foreign_key_check`) before it commits, so a step may rebuild a table.
package struct Migrator: Sendable {
    struct Migration: Sendable {
        var identifier: String
        var migrate: @Sendable (Connection) throws -> Void
    }

    private(set) var migrations: [Migration] = []

    package init() {}

    /// Adds a step after the others. Identifiers are unique and never change once shipped.
    package mutating func registerMigration(
        _ identifier: String,
        migrate: @escaping @Sendable (Connection) throws -> Void
    ) {
        precondition(!self.migrations.contains { $0.identifier == identifier }, "migration \(identifier) twice")
        self.migrations.append(Migration(identifier: identifier, migrate: migrate))
    }

    /// The identifiers recorded as applied (including any of a later usherd this one does not know).
    package func appliedIdentifiers(_ connection: Connection) throws -> Set<String> {
        try self.createTable(connection)
        return Set(try connection.fetchAll(String.self, sql: "SELECT identifier FROM grdb_migrations"))
    }

    /// Runs every step not applied yet, up to and including `target` (every step when nil).
    ///
    /// A database already past `target` is an error (tests build old schemas this way; a fresh file never is). Steps
    /// recorded that this usherd does not know (a later one's) are left alone, as GRDB did.
    package func migrate(_ connection: Connection, upTo target: String? = nil) throws {
        let targetIndex =
            target.map { target in self.migrations.firstIndex { $0.identifier == target } }
            ?? self.migrations.indices.last
        guard let targetIndex else {
            if let target { preconditionFailure("no migration \(target)") }
            return
        }
        let applied = try self.appliedIdentifiers(connection)
        if let last = self.migrations.lastIndex(where: { applied.contains($0.identifier) }), last > targetIndex {
            throw StoreError.migratedBeyond(target: self.migrations[targetIndex].identifier)
        }
        for migration in self.migrations[...targetIndex] where !applied.contains(migration.identifier) {
            try self.run(migration, on: connection)
        }
    }

    private func createTable(_ connection: Connection) throws {
        try connection.execute(sql: "CREATE TABLE IF NOT EXISTS grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY)")
    }

    private func run(_ migration: Migration, on connection: Connection) throws {
        let foreignKeys = try connection.fetchOne(Bool.self, sql: "PRAGMA foreign_keys") ?? false
        // Takes effect outside a transaction only, hence before BEGIN and after COMMIT.
        if foreignKeys { try connection.execute(sql: "PRAGMA foreign_keys = OFF") }
        defer { if foreignKeys { try? connection.execute(sql: "PRAGMA foreign_keys = ON") } }
        try connection.transaction(.immediate) {
            try migration.migrate(connection)
            try connection.execute(
                sql: "INSERT INTO grdb_migrations (identifier) VALUES (?)",
                arguments: [migration.identifier]
            )
            if foreignKeys {
                let violations = try connection.fetchAll(sql: "PRAGMA foreign_key_check") { row in
                    try row[0] as String
                }
                if let table = violations.first {
                    throw StoreError.sqlite(
                        code: 787,  // SQLITE_CONSTRAINT_FOREIGNKEY
                        message: "migration \(migration.identifier) breaks a foreign key of table \(table)"
                    )
                }
            }
        }
    }
}
