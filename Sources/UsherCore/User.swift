import Crypto
import UsherProtocol

/// A user on the device, as the registry holds and persists it.
package struct User: Sendable, Hashable {
    package enum State: String, Sendable, Hashable {
        case loggedIn = "logged_in"
        case loggedOut = "logged_out"
    }

    package var id: String
    package var provider: String
    package var subject: String
    package var kind: String
    package var email: String?
    package var name: String?
    package var state: State
    /// The generation at which the user was added to the device: `list_users` orders by it.
    package var addedGeneration: Int64
    package var createdAt: Timestamp
    package var lastLoginAt: Timestamp?
    package var lastActiveAt: Timestamp?
    /// The generation at which the user last became active (login or switch); 0 when never. Generations never
    /// repeat, so this orders users by recency without ties.
    package var activeGeneration: Int64
    /// The session's tokens; nil when logged out.
    package var tokens: TokenSet?
    package var providerData: String?
    /// The user's identities other than the session's own (`provider`, `kind`, `subject`), in the order they were
    /// linked; empty for almost every user, so that it costs nothing until one links a second identity.
    package var otherIdentities: [Identity]
    /// The uid of the peer that opened the current session (login or link); nil when unknown (sessions from before
    /// usher recorded it). `delete_user` lets that uid delete the account without `manage` over others.
    package var sessionUID: UInt32?
    /// The standard claims the provider gave (see `UserInfo.profile`).
    package var profile: UserClaims
    /// The claims the provider's `custom_claims` names.
    package var customData: UserClaims

    package init(
        id: String,
        provider: String,
        subject: String,
        kind: String,
        email: String?,
        name: String?,
        state: State,
        addedGeneration: Int64,
        createdAt: Timestamp,
        lastLoginAt: Timestamp?,
        lastActiveAt: Timestamp?,
        activeGeneration: Int64,
        tokens: TokenSet?,
        providerData: String?,
        otherIdentities: [Identity] = [],
        sessionUID: UInt32? = nil,
        profile: UserClaims = .empty,
        customData: UserClaims = .empty
    ) {
        self.id = id
        self.provider = provider
        self.subject = subject
        self.kind = kind
        self.email = email
        self.name = name
        self.state = state
        self.addedGeneration = addedGeneration
        self.createdAt = createdAt
        self.lastLoginAt = lastLoginAt
        self.lastActiveAt = lastActiveAt
        self.activeGeneration = activeGeneration
        self.tokens = tokens
        self.providerData = providerData
        self.otherIdentities = otherIdentities
        self.sessionUID = sessionUID
        self.profile = profile
        self.customData = customData
    }

    /// A user id that no identity derives: for a new user whose derived id is taken (its identity was unlinked from
    /// the user that has it).
    package static func randomID() -> String {
        var generator = SystemRandomNumberGenerator()
        let hex = (0..<16).map { _ in
            let byte = UInt8.random(in: 0...255, using: &generator)
            let digits = Array("0123456789abcdef".utf8)
            return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]], as: UTF8.self)
        }
        return "u_" + hex.joined()
    }

    /// The user id for an account: stable for (provider, subject), so a user removed from the device and logging in
    /// again gets the same id without the device remembering it.
    package static func id(provider: String, subject: String) -> String {
        let digest = SHA256.hash(data: Array("usher.user.v1\u{0}\(provider)\u{0}\(subject)".utf8))
        let hex = digest.prefix(16).map { byte in
            let digits = Array("0123456789abcdef".utf8)
            return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]], as: UTF8.self)
        }
        return "u_" + hex.joined()
    }

    /// Anonymous: every identity is anonymous. A guest who links another identity is no longer anonymous: logging it
    /// out keeps it, and anonymous login no longer reuses it.
    package var isAnonymous: Bool {
        self.kind == CredentialType.anonymous && self.otherIdentities.allSatisfy(\.isAnonymous)
    }

    /// The identity the session belongs to: the one used for the last login or link.
    package var sessionIdentity: Identity {
        get { Identity(provider: self.provider, kind: self.kind, subject: self.subject) }
        set {
            self.provider = newValue.provider
            self.kind = newValue.kind
            self.subject = newValue.subject
        }
    }

    /// Every identity: the session's first, then the others.
    package var identities: [Identity] { [self.sessionIdentity] + self.otherIdentities }

    /// Whether the two versions of a user have the same identities, the session's the same one (no array is made).
    package func hasSameIdentities(as other: User) -> Bool {
        self.sessionIdentity == other.sessionIdentity && self.otherIdentities == other.otherIdentities
    }

    /// Whether `identity` is one of this user's.
    package func has(_ identity: Identity) -> Bool {
        self.identities.contains { $0.isSameAccount(as: identity) }
    }

    /// Makes `identity` (one of the user's, or a new one) the session's; the previous session identity joins the
    /// others.
    package mutating func makeSessionIdentity(_ identity: Identity) {
        let previous = self.sessionIdentity
        self.otherIdentities.removeAll { $0.isSameAccount(as: identity) }
        if !previous.isSameAccount(as: identity) { self.otherIdentities.append(previous) }
        self.sessionIdentity = identity
    }

    package var session: ProviderSession? {
        self.tokens.map {
            ProviderSession(userID: self.id, subject: self.subject, tokens: $0, providerData: self.providerData)
        }
    }
}

/// Credential type names shared by the core and providers.
package enum CredentialType {
    package static let emailPassword = "email_password"
    package static let anonymous = "anonymous"
    package static let apiKey = "api_key"
}

/// The durable form of the registry: everything `SessionStore` loads at start.
package struct PersistedSessions: Sendable {
    package var generation: Int64
    package var users: [User]
    /// Each seat's active user as last committed; nil when the store has never recorded seats (a database from
    /// before seats: the default seat then gets the most recently active user, as before).
    package var seats: [String: String?]?

    package init(generation: Int64, users: [User], seats: [String: String?]? = nil) {
        self.generation = generation
        self.users = users
        self.seats = seats
    }
}

/// One atomic change to the durable state: written in a single transaction.
package struct SessionChange: Sendable {
    /// The new generation, when the change moves it.
    package var generation: Int64?
    package var saved: [User]
    /// The committed version of each saved user that existed before this change, by id. The store writes only the
    /// columns that differ from it; a saved user without an entry here is new and is inserted whole.
    package var previous: [String: User]
    package var deleted: [String]
    /// Providers' writes that belong to this change (a rotated refresh grant): performed in the same transaction,
    /// which fails as a whole when one of them cannot be.
    package var pendingWrites: [any PendingWrite]
    /// Seats whose active user this change sets (nil: none), by name.
    package var seats: [String: String?] = [:]
    /// Users whose identities the store forgets (deleted accounts, anonymous users removed): logging in with one of
    /// them later makes a new user. A user removed from the device otherwise keeps its identities in the store.
    package var forgottenIdentities: Set<String> = []

    package init(
        generation: Int64?,
        saved: [User],
        deleted: [String],
        pendingWrites: [any PendingWrite] = [],
        previous: [String: User] = [:]
    ) {
        self.generation = generation
        self.saved = saved
        self.deleted = deleted
        self.pendingWrites = pendingWrites
        self.previous = previous
    }
}

/// Durable storage of the registry's state. `commit` returns only once the change is on disk, with its pending writes;
/// a pending write the store cannot perform fails the whole commit (`ProviderError.sessionRevoked` when the grant it
/// consumes is gone).
package protocol SessionStore: Sendable {
    func loadSessions() async throws -> PersistedSessions
    func commit(_ change: SessionChange) async throws
    /// The user that owns `identity` (on the device or removed from it), with all of its identities; nil when none.
    func owner(of identity: Identity) async throws -> IdentityOwner?
    /// Whether any identity belongs to the user id `userID` (a user removed from the device keeps its identities).
    func ownsIdentities(_ userID: String) async throws -> Bool
}
