import UsherCore
import UsherProtocol
import UsherStore

/// The profile of an email/password account: its email, and the name, picture and locale its owner set with
/// `update_profile`, kept with the account so that every later login gets them.
extension LocalProvider: ProfileReading, ProfileEditing {
    /// The claims `update_profile` may set, and the longest value of each (UTF-8 bytes).
    package static let editableProfileClaims: [String: Int] = ["name": 256, "picture": 512, "locale": 35]

    /// The account's profile as a login reports it: what its owner set, with the account's email.
    func accountProfile(_ account: LocalAccount) async throws -> UserClaims {
        var claims = try await self.database.localProfile(provider: self.name, id: account.id)?.claims ?? [:]
        claims["email"] = .string(account.email)
        return UserClaims(claims)
    }

    package func readProfile(_ session: ProviderSession) async throws -> (profile: UserClaims?, customData: UserClaims?)
    {
        guard !OutsideCredentials.isOutsideSubject(session.subject),
            let account = try await self.database.localAccount(provider: self.name, id: session.subject)
        else { return (nil, nil) }
        return (try await self.accountProfile(account), nil)
    }

    package func updateProfile(
        subject: String,
        changes: [String: JSONValue]
    ) async throws -> (profile: UserClaims, write: any PendingWrite) {
        guard !OutsideCredentials.isOutsideSubject(subject),
            let account = try await self.database.localAccount(provider: self.name, id: subject)
        else {
            throw ProviderError.unsupportedCredentials(
                "only email/password accounts keep a profile to update; this user's profile comes from its credentials"
            )
        }
        var claims = try await self.database.localProfile(provider: self.name, id: account.id)?.claims ?? [:]
        for (name, value) in changes {
            let checked = try Self.checkedProfileValue(name, value)
            if case .null = checked { claims[name] = nil } else { claims[name] = checked }
        }
        let stored = UserClaims(claims)
        claims["email"] = .string(account.email)
        return (UserClaims(claims), LocalProfileWrite(provider: self.name, accountID: account.id, profile: stored))
    }

    /// A value `update_profile` accepts for `name`: a string of the claim's shape, or null or "" to remove it.
    package static func checkedProfileValue(_ name: String, _ value: JSONValue) throws(ProviderError) -> JSONValue {
        guard let limit = Self.editableProfileClaims[name] else {
            throw .invalidParams(parameter: name, "update_profile sets name, picture and locale, not \(name)")
        }
        let text: String
        switch value {
        case .null: return .null
        case .string(let string): text = string
        default: throw .invalidParams(parameter: name, "params.\(name) must be a string or null")
        }
        if text.isEmpty { return .null }
        guard text.utf8.count <= limit else {
            throw .invalidParams(parameter: name, "params.\(name) is longer than \(limit) bytes")
        }
        guard !text.containsControlCharacters else {
            throw .invalidParams(parameter: name, "params.\(name) contains a control character (such as a line break)")
        }
        switch name {
        case "picture":
            guard UserClaims.isWebURL(text) else {
                throw .invalidParams(
                    parameter: name,
                    "params.picture must be an https:// URL with a host, of URL characters only (others percent-encoded)"
                )
            }
        case "locale":
            guard Self.isLanguageTag(text) else {
                throw .invalidParams(parameter: name, "params.locale must be a BCP 47 language tag such as en or pt-BR")
            }
        default:
            guard !UserClaims.isInvisible(text) else {
                throw .invalidParams(
                    parameter: name,
                    "params.name is blank (only spaces or characters that show nothing)"
                )
            }
        }
        return .string(text)
    }

    /// The shape of a BCP 47 tag: a 2–8 letter language, then subtags of 1–8 letters or digits, joined by `-`.
    package static func isLanguageTag(_ text: String) -> Bool {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard let language = parts.first, (2...8).contains(language.count),
            language.allSatisfy({ $0.isASCII && $0.isLetter })
        else { return false }
        return parts.dropFirst().allSatisfy { part in
            (1...8).contains(part.count) && part.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
        }
    }
}
