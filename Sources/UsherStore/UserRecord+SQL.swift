/// The statements on the `user` table, built from `UserRecord.Columns` (names only: every value is bound).
extension UserRecord {
    /// Every column, in the order of `Columns`: what `init(row:)` reads by index.
    static let selection = Columns.allCases.map { #""\#($0.rawValue)""# }.joined(separator: ", ")

    /// Inserts the row whole, or, when a row has its id, replaces every column but the id.
    private static let upsertSQL: String = {
        let others = Columns.allCases.filter { $0 != .id }
        let placeholders = Array(repeating: "?", count: Columns.allCases.count).joined(separator: ", ")
        let updates = others.map { #""\#($0.rawValue)" = excluded."\#($0.rawValue)""# }.joined(separator: ", ")
        return #"INSERT INTO "user" (\#(UserRecord.selection)) VALUES (\#(placeholders))"#
            + #" ON CONFLICT ("id") DO UPDATE SET \#(updates)"#
    }()

    /// The stored value of one column.
    func value(of column: Columns) -> any SQLArgument {
        switch column {
        case .id: self.id
        case .provider: self.provider
        case .subject: self.subject
        case .kind: self.kind
        case .email: self.email
        case .name: self.name
        case .state: self.state
        case .addedGeneration: self.addedGeneration
        case .createdAt: self.createdAt
        case .lastLoginAt: self.lastLoginAt
        case .lastActiveAt: self.lastActiveAt
        case .activeGeneration: self.activeGeneration
        case .accessToken: self.accessToken
        case .accessTokenIssuedAt: self.accessTokenIssuedAt
        case .accessTokenExpiresAt: self.accessTokenExpiresAt
        case .refreshToken: self.refreshToken
        case .refreshTokenExpiresAt: self.refreshTokenExpiresAt
        case .providerData: self.providerData
        case .linkedIdentities: self.linkedIdentities
        case .sessionUID: self.sessionUID
        case .profile: self.profile
        case .customData: self.customData
        case .dpopKey: self.dpopKey
        }
    }

    /// Inserts the row, or replaces the row with its id: every column, so every secret must be filled in.
    func upsert(in db: Connection) throws {
        try db.execute(sql: Self.upsertSQL, arguments: Columns.allCases.map(self.value(of:)))
    }

    /// Sets only `columns` of the row with this id: an `UPDATE` that names no other column, so an unchanged sealed
    /// secret keeps its stored bytes and SQLite writes no more than changed.
    func update(in db: Connection, columns: Set<Columns>) throws {
        // In the order of `Columns`, so that one set of columns is always one SQL text (one cached statement).
        let set = Columns.allCases.filter { columns.contains($0) && $0 != .id }
        guard !set.isEmpty else { return }
        let assignments = set.map { #""\#($0.rawValue)" = ?"# }.joined(separator: ", ")
        try db.execute(
            sql: #"UPDATE "user" SET \#(assignments) WHERE "id" = ?"#,
            arguments: set.map(self.value(of:)) + [self.id as any SQLArgument]
        )
    }

    /// Deletes the rows of these ids.
    static func delete(in db: Connection, ids: [String]) throws {
        for id in ids { try db.execute(sql: #"DELETE FROM "user" WHERE "id" = ?"#, arguments: [id]) }
    }
}
