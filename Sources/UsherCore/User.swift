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
        self.profile = profile
        self.customData = customData
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

    package var isAnonymous: Bool { self.kind == CredentialType.anonymous }

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
}
