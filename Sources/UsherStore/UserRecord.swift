import UsherCore
import UsherProtocol

/// One row of the `user` table as it is stored: timestamps in milliseconds since the epoch, and the session secrets
/// (tokens, provider data) sealed when a `TokenCipher` is configured.
///
/// The columns are named once, in `Columns`; every statement on the table is built from them (`UserRecord+SQL.swift`),
/// so no SQL depends on the order of the table's columns.
struct UserRecord {
    enum Columns: String, CaseIterable {
        case id
        case provider
        case subject
        case kind
        case email
        case name
        case state
        case addedGeneration = "added_generation"
        case createdAt = "created_at"
        case lastLoginAt = "last_login_at"
        case lastActiveAt = "last_active_at"
        case activeGeneration = "active_generation"
        case accessToken = "access_token"
        case accessTokenIssuedAt = "access_token_issued_at"
        case accessTokenExpiresAt = "access_token_expires_at"
        case refreshToken = "refresh_token"
        case refreshTokenExpiresAt = "refresh_token_expires_at"
        case providerData = "provider_data"
        case linkedIdentities = "linked_identities"
        case sessionUID = "session_uid"
        case profile
        case customData = "custom_data"
        case dpopKey = "dpop_key"
    }

    var id: String
    var provider: String
    var subject: String
    var kind: String
    var email: String?
    var name: String?
    var state: String
    var addedGeneration: Int64
    var createdAt: Int64
    var lastLoginAt: Int64?
    var lastActiveAt: Int64?
    var activeGeneration: Int64
    var accessToken: String?
    var accessTokenIssuedAt: Int64?
    var accessTokenExpiresAt: Int64?
    var refreshToken: String?
    var refreshTokenExpiresAt: Int64?
    var providerData: String?
    var linkedIdentities: Int
    var sessionUID: Int64?
    /// Canonical JSON text (`UserClaims.json`); `{}` when empty (column default, migration `v8-profiles`).
    var profile: String
    var customData: String
    /// The session's DPoP private key (`DPoPKey.stored`), sealed like the tokens; nil for bearer sessions.
    var dpopKey: String?

    /// Reads a row selected with `UserRecord.selection`, by column index.
    ///
    /// Why by index: loading 100,000 users at start is on the daemon's start-up path, and looking every column up by
    /// name in every row costs several times more (see `loadSessions`). The order is the one of `Columns`, which
    /// `selection` selects.
    init(row: Row) throws(StoreError) {
        self.id = try row[0]
        self.provider = try row[1]
        self.subject = try row[2]
        self.kind = try row[3]
        self.email = try row[4]
        self.name = try row[5]
        self.state = try row[6]
        self.addedGeneration = try row[7]
        self.createdAt = try row[8]
        self.lastLoginAt = try row[9]
        self.lastActiveAt = try row[10]
        self.activeGeneration = try row[11]
        self.accessToken = try row[12]
        self.accessTokenIssuedAt = try row[13]
        self.accessTokenExpiresAt = try row[14]
        self.refreshToken = try row[15]
        self.refreshTokenExpiresAt = try row[16]
        self.providerData = try row[17]
        self.linkedIdentities = try row[18]
        self.sessionUID = try row[19]
        self.profile = try row[20]
        self.customData = try row[21]
        self.dpopKey = try row[22]
    }

    /// The row for `user`. Only the secret columns in `sealing` are sealed (with `cipher`) and filled in; the others
    /// are left nil, which is right only for an update that does not write them (see `changedColumns`): sealing is
    /// the expensive part of a write, and a fresh nonce makes resealed text differ even when the secret did not.
    init(_ user: User, sealing: Set<Columns> = Columns.secrets, cipher: TokenCipher?) throws {
        func sealed(_ value: String?, _ column: Columns) throws -> String? {
            guard sealing.contains(column) else { return nil }
            return try cipher.map { try $0.seal(value) } ?? value
        }
        self.id = user.id
        self.provider = user.provider
        self.subject = user.subject
        self.kind = user.kind
        self.email = user.email
        self.name = user.name
        self.state = user.state.rawValue
        self.addedGeneration = user.addedGeneration
        self.createdAt = user.createdAt.millisecondsSinceEpoch
        self.lastLoginAt = user.lastLoginAt?.millisecondsSinceEpoch
        self.lastActiveAt = user.lastActiveAt?.millisecondsSinceEpoch
        self.activeGeneration = user.activeGeneration
        self.accessToken = try sealed(user.tokens?.accessToken, .accessToken)
        self.accessTokenIssuedAt = user.tokens?.issuedAt.millisecondsSinceEpoch
        self.accessTokenExpiresAt = user.tokens?.expiresAt.millisecondsSinceEpoch
        self.refreshToken = try sealed(user.tokens?.refreshToken, .refreshToken)
        self.refreshTokenExpiresAt = user.tokens?.refreshExpiresAt?.millisecondsSinceEpoch
        self.providerData = try sealed(user.providerData, .providerData)
        self.linkedIdentities = user.otherIdentities.count
        self.sessionUID = user.sessionUID.map(Int64.init)
        self.profile = user.profile.json
        self.customData = user.customData.json
        self.dpopKey = try sealed(user.tokens?.dpopKey?.stored, .dpopKey)
    }

    /// Whether a secret column holds plaintext (stored before encryption was turned on).
    var holdsPlaintextSecrets: Bool {
        TokenCipher.isPlaintext(self.accessToken) || TokenCipher.isPlaintext(self.refreshToken)
            || TokenCipher.isPlaintext(self.providerData) || TokenCipher.isPlaintext(self.dpopKey)
    }

    /// The user this row holds, its secrets opened with `opener`.
    ///
    /// A row without a complete token set is logged out, whatever its `state` says: a session cannot be logged in
    /// without tokens.
    func user(opening opener: TokenCipher.Opener) throws(StoreError) -> User {
        var tokens: TokenSet? = nil
        if let accessToken = try opener.open(self.accessToken), let issuedAt = self.accessTokenIssuedAt,
            let expiresAt = self.accessTokenExpiresAt
        {
            tokens = TokenSet(
                accessToken: accessToken,
                issuedAt: Timestamp(millisecondsSinceEpoch: issuedAt),
                expiresAt: Timestamp(millisecondsSinceEpoch: expiresAt),
                refreshToken: try opener.open(self.refreshToken),
                refreshExpiresAt: self.refreshTokenExpiresAt.map(Timestamp.init(millisecondsSinceEpoch:)),
                dpopKey: try Self.dpopKey(opener.open(self.dpopKey))
            )
        }
        let state = User.State(rawValue: self.state) ?? .loggedOut
        return User(
            id: self.id,
            provider: self.provider,
            subject: self.subject,
            kind: self.kind,
            email: self.email,
            name: self.name,
            state: tokens == nil ? .loggedOut : state,
            addedGeneration: self.addedGeneration,
            createdAt: Timestamp(millisecondsSinceEpoch: self.createdAt),
            lastLoginAt: self.lastLoginAt.map(Timestamp.init(millisecondsSinceEpoch:)),
            lastActiveAt: self.lastActiveAt.map(Timestamp.init(millisecondsSinceEpoch:)),
            activeGeneration: self.activeGeneration,
            tokens: tokens,
            providerData: try opener.open(self.providerData),
            sessionUID: self.sessionUID.flatMap(UInt32.init(exactly:)),
            profile: UserClaims(storedJSON: self.profile),
            customData: UserClaims(storedJSON: self.customData)
        )
    }
}

extension UserRecord {
    /// The DPoP key a row holds. A stored key that is not one is an error, not a bearer session: the session's tokens
    /// are bound to a key the daemon no longer has.
    static func dpopKey(_ stored: String?) throws(StoreError) -> DPoPKey? {
        guard let stored else { return nil }
        guard let key = DPoPKey(stored: stored) else { throw .wrongTokenKey }
        return key
    }
}

extension UserRecord.Columns {
    /// The columns a `TokenCipher` seals.
    static let secrets: Set<Self> = [.accessToken, .refreshToken, .providerData, .dpopKey]

    /// The columns whose stored value differs between `old` and `new` (two versions of one user, so never the id),
    /// compared in plaintext, field by field.
    ///
    /// Compared before sealing because a sealed value is different every time it is sealed: comparing sealed text
    /// would rewrite every secret on every change.
    static func changed(from old: User, to new: User) -> Set<Self> {
        var columns: Set<Self> = []
        func check(_ differs: Bool, _ column: Self) { if differs { columns.insert(column) } }
        check(old.provider != new.provider, .provider)
        check(old.subject != new.subject, .subject)
        check(old.kind != new.kind, .kind)
        check(old.email != new.email, .email)
        check(old.name != new.name, .name)
        check(old.state != new.state, .state)
        check(old.addedGeneration != new.addedGeneration, .addedGeneration)
        check(old.createdAt != new.createdAt, .createdAt)
        check(old.lastLoginAt != new.lastLoginAt, .lastLoginAt)
        check(old.lastActiveAt != new.lastActiveAt, .lastActiveAt)
        check(old.activeGeneration != new.activeGeneration, .activeGeneration)
        check(old.tokens?.accessToken != new.tokens?.accessToken, .accessToken)
        check(old.tokens?.issuedAt != new.tokens?.issuedAt, .accessTokenIssuedAt)
        check(old.tokens?.expiresAt != new.tokens?.expiresAt, .accessTokenExpiresAt)
        check(old.tokens?.refreshToken != new.tokens?.refreshToken, .refreshToken)
        check(old.tokens?.refreshExpiresAt != new.tokens?.refreshExpiresAt, .refreshTokenExpiresAt)
        check(old.providerData != new.providerData, .providerData)
        check(old.otherIdentities.count != new.otherIdentities.count, .linkedIdentities)
        check(old.sessionUID != new.sessionUID, .sessionUID)
        check(old.profile != new.profile, .profile)
        check(old.customData != new.customData, .customData)
        check(old.tokens?.dpopKey != new.tokens?.dpopKey, .dpopKey)
        return columns
    }
}
