import UsherCore
import UsherProtocol

extension AppDatabase: LoginThrottleStore {
    package func loadLoginThrottle(forgottenBefore: Timestamp, maximumOwners: Int) async throws -> LoginThrottleRecords
    {
        try await self.writer.write { db in
            // Counts nobody will look at again: forgotten, and locking nothing out.
            try db.execute(
                sql: "DELETE FROM login_failure WHERE last_failure_at < ? AND blocked_until < ?",
                arguments: [forgottenBefore.millisecondsSinceEpoch, forgottenBefore.millisecondsSinceEpoch]
            )
            let counts = try db.fetchAll(
                sql: "SELECT key, failures, last_failure_at, blocked_until FROM login_failure"
            ) { row in
                LoginThrottleRecords.Count(
                    key: try row[0],
                    failures: try row[1],
                    lastFailure: Timestamp(millisecondsSinceEpoch: try row[2]),
                    blockedUntil: Timestamp(millisecondsSinceEpoch: try row[3])
                )
            }
            let owners = try db.fetchAll(
                sql: "SELECT account, uid, since FROM login_owner ORDER BY since DESC LIMIT ?",
                arguments: [maximumOwners]
            ) { row in
                LoginThrottleRecords.Owner(
                    account: try row[0],
                    uid: UInt32(truncatingIfNeeded: try row[1] as Int64),
                    since: Timestamp(millisecondsSinceEpoch: try row[2])
                )
            }
            return LoginThrottleRecords(counts: counts, owners: owners)
        }
    }

    package func saveLoginThrottle(_ change: @escaping @Sendable () -> LoginThrottleRecords) async throws {
        try await self.writer.write { db in
            let records = change()
            for count in records.counts {
                if count.failures == 0 {
                    try db.execute(sql: "DELETE FROM login_failure WHERE key = ?", arguments: [count.key])
                } else {
                    try db.execute(
                        sql: """
                            INSERT INTO login_failure (key, failures, last_failure_at, blocked_until) VALUES (?, ?, ?, ?)
                            ON CONFLICT (key) DO UPDATE SET failures = excluded.failures,
                                last_failure_at = excluded.last_failure_at, blocked_until = excluded.blocked_until
                            """,
                        arguments: [
                            count.key, count.failures, count.lastFailure.millisecondsSinceEpoch,
                            count.blockedUntil.millisecondsSinceEpoch,
                        ]
                    )
                }
            }
            for owner in records.owners {
                try db.execute(
                    sql: """
                        INSERT INTO login_owner (account, uid, since) VALUES (?, ?, ?)
                        ON CONFLICT (account) DO UPDATE SET uid = excluded.uid, since = excluded.since
                        """,
                    arguments: [owner.account, Int64(owner.uid), owner.since.millisecondsSinceEpoch]
                )
            }
        }
    }
}
