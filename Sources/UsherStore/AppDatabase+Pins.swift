import UsherCore
import UsherProtocol

/// Seat locks and PINs (`SessionRegistry+Locks`): a PIN is kept only as its slow salted hash, with the wrong PINs
/// given in a row; it is a row of the user's, gone when the user is removed from the device (`ON DELETE CASCADE`).
extension AppDatabase: SeatLockStore {
    /// The tables of migration `v10-seat-pins` (frozen once shipped).
    static func createSeatPins(_ db: Connection) throws {
        try db.execute(
            sql: """
                CREATE TABLE "seat_lock" ("seat" TEXT PRIMARY KEY NOT NULL, "locked_by" TEXT NOT NULL, \
                "locked_at" INTEGER NOT NULL);
                CREATE TABLE "user_pin" ("user_id" TEXT PRIMARY KEY NOT NULL \
                REFERENCES "user"("id") ON DELETE CASCADE, "pin_hash" TEXT NOT NULL, \
                "failures" INTEGER NOT NULL DEFAULT 0, "set_at" INTEGER NOT NULL);
                """
        )
    }

    package func seatLocks() async throws -> [String: SeatLockAgent] {
        try await self.writer.read { db in
            let rows = try db.fetchAll(sql: #"SELECT "seat", "locked_by" FROM "seat_lock""#) { row in
                (try row[0] as String, try row[1] as String)
            }
            var locks: [String: SeatLockAgent] = [:]
            // A value this version does not know (written by a later one) still locks: as usherd's, the PIN's lock.
            for (seat, agent) in rows { locks[seat] = SeatLockAgent(rawValue: agent) ?? .usherd }
            return locks
        }
    }

    package func setSeatLock(_ agent: SeatLockAgent?, on seat: String, at time: Timestamp) async throws {
        try await self.writer.write { db in
            if let agent {
                try db.execute(
                    sql: """
                        INSERT INTO "seat_lock" ("seat", "locked_by", "locked_at") VALUES (?, ?, ?)
                        ON CONFLICT ("seat") DO UPDATE SET "locked_by" = excluded."locked_by",
                            "locked_at" = excluded."locked_at"
                        """,
                    arguments: [seat, agent.rawValue, time.millisecondsSinceEpoch]
                )
            } else {
                try db.execute(sql: #"DELETE FROM "seat_lock" WHERE "seat" = ?"#, arguments: [seat])
            }
        }
    }

    package func storedPIN(of userID: String) async throws -> StoredPIN? {
        try await self.writer.read { db in
            try db.fetchOne(
                sql: #"SELECT "pin_hash", "failures" FROM "user_pin" WHERE "user_id" = ?"#,
                arguments: [userID]
            ) { row in StoredPIN(hash: try row[0], failures: try row[1]) }
        }
    }

    package func setPINHash(_ hash: String, of userID: String, at time: Timestamp) async throws {
        try await self.writer.write { db in
            try db.execute(
                sql: """
                    INSERT INTO "user_pin" ("user_id", "pin_hash", "failures", "set_at") VALUES (?, ?, 0, ?)
                    ON CONFLICT ("user_id") DO UPDATE SET "pin_hash" = excluded."pin_hash", "failures" = 0,
                        "set_at" = excluded."set_at"
                    """,
                arguments: [userID, hash, time.millisecondsSinceEpoch]
            )
        }
    }

    package func recordPINFailure(of userID: String) async throws -> Int {
        try await self.writer.write { db in
            try db.execute(
                sql: #"UPDATE "user_pin" SET "failures" = "failures" + 1 WHERE "user_id" = ?"#,
                arguments: [userID]
            )
            return try db.fetchOne(
                Int.self,
                sql: #"SELECT "failures" FROM "user_pin" WHERE "user_id" = ?"#,
                arguments: [userID]
            ) ?? 0
        }
    }

    package func clearPINFailures(of userID: String) async throws {
        try await self.writer.write { db in
            try db.execute(sql: #"UPDATE "user_pin" SET "failures" = 0 WHERE "user_id" = ?"#, arguments: [userID])
        }
    }
}
