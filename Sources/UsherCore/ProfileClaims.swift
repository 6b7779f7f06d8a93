import UsherProtocol

/// Which claims a user's `profile` and `custom_data` keep, and how they are bounded and cleaned.
///
/// `profile` is an allowlist of the standard OpenID Connect claims (Core §5.1): nothing else a provider sends reaches
/// it, so a token, a nonce or an `at_hash` can never be kept. `custom_data` holds only the claims a provider's
/// `custom_claims` names, and configuration refuses names of secrets (`UserClaims.secretClaimNames`).
extension UserClaims {
    /// The standard claims `profile` keeps, and the JSON type each must have (a claim of another type is left out).
    package static let profileClaimTypes: [String: ProfileClaimType] = [
        "name": .string, "given_name": .string, "family_name": .string, "middle_name": .string,
        "nickname": .string, "preferred_username": .string, "profile": .string, "picture": .string,
        "website": .string, "email": .string, "email_verified": .boolean, "gender": .string, "birthdate": .string,
        "zoneinfo": .string, "locale": .string, "phone_number": .string, "phone_number_verified": .boolean,
        "updated_at": .number,
    ]

    package enum ProfileClaimType: Sendable {
        case string, boolean, number
    }

    /// Claims that carry or bind secrets, which `custom_claims` may not name.
    package static let secretClaimNames: Set<String> = [
        "access_token", "refresh_token", "id_token", "at_hash", "c_hash", "s_hash", "nonce", "code", "code_verifier",
        "client_secret", "password", "token", "jti", "sid", "cnf", "session_state", "sub_jwk",
    ]

    /// The longest string a profile claim keeps, in UTF-8 bytes: a longer one is left out.
    package static let maximumProfileValueBytes = 512
    /// The largest encoded `custom_data` kept, in bytes: claims are added in name order while they fit; one that
    /// does not fit is left out.
    package static let maximumCustomDataBytes = 4096
    /// How many names `custom_claims` may list.
    package static let maximumCustomClaimNames = 32

    /// The profile claims of a provider's claim set (an ID token, userinfo, a JWT): the standard ones of the right
    /// type, strings cleaned of control characters and bounded in length.
    package static func profile(from claims: [String: JSONValue]) -> UserClaims {
        var kept: [String: JSONValue] = [:]
        for (name, type) in Self.profileClaimTypes {
            guard let value = claims[name] else { continue }
            switch (type, value) {
            case (.string, .string(let text)):
                guard let cleaned = Self.cleaned(text), !Self.isInvisible(cleaned) else { continue }
                if Self.urlClaimNames.contains(name), !Self.isWebURL(cleaned, allowingHTTP: true) { continue }
                kept[name] = .string(cleaned)
            case (.boolean, .bool):
                kept[name] = value
            case (.boolean, .string(let text)) where text == "true" || text == "false":
                // Some providers send booleans as strings.
                kept[name] = .bool(text == "true")
            case (.number, .int), (.number, .double):
                kept[name] = value
            default:
                continue
            }
        }
        return UserClaims(kept)
    }

    /// The profile claims that hold a URL a program may open or show as a link: only `https` (and, from a provider,
    /// `http`) URLs are kept, never `javascript:`, `data:` or `file:`.
    package static let urlClaimNames: Set<String> = ["picture", "website", "profile"]

    /// Whether `text` is an absolute `https` URL (or `http` with `allowingHTTP`) of RFC 3986's characters only: a host,
    /// no user information, nothing a page or a terminal would read as the end of an attribute or a tag (`"`, `<`,
    /// `>`, a space, a backslash), no characters outside ASCII (an IRI's must be percent-encoded).
    package static func isWebURL(_ text: String, allowingHTTP: Bool = false) -> Bool {
        let lowered = text.lowercased()
        let scheme: String
        if lowered.hasPrefix("https://") {
            scheme = "https://"
        } else if allowingHTTP, lowered.hasPrefix("http://") {
            scheme = "http://"
        } else {
            return false
        }
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:/?#[]@!$&'()*+,;=%".utf8)
        guard text.utf8.allSatisfy({ allowed.contains($0) }) else { return false }
        let rest = text.utf8.dropFirst(scheme.utf8.count)
        let authority = rest.prefix { $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#") }
        return !authority.isEmpty && !authority.contains(UInt8(ascii: "@"))
            && authority.first != UInt8(ascii: ":")
    }

    /// Whether `text` shows nothing: only white space and characters that take no room (zero-width spaces and
    /// joiners, the byte-order mark, other format characters, and what Unicode says to ignore when showing text).
    package static func isInvisible(_ text: String) -> Bool {
        text.unicodeScalars.allSatisfy { scalar in
            scalar.properties.isWhitespace || scalar.properties.isDefaultIgnorableCodePoint
                || scalar.properties.generalCategory == .format || scalar.isControlCharacter
        }
    }

    /// The claims `names` picks from `claims`, their strings (keys and values, at any depth) cleaned of control
    /// characters, bounded as a whole by `maximumCustomDataBytes`.
    package static func customData(from claims: [String: JSONValue], names: [String]) -> UserClaims {
        var kept: [String: JSONValue] = [:]
        var size = 2
        for name in names.sorted() where !Self.secretClaimNames.contains(name) {
            guard let value = claims[name], let cleaned = Self.cleaned(value, depth: 0) else { continue }
            let cost = UserClaims(["": cleaned]).json.utf8.count - 2 + name.utf8.count + 1
            guard size + cost <= Self.maximumCustomDataBytes else { continue }
            size += cost
            kept[name] = cleaned
        }
        return UserClaims(kept)
    }

    /// A display string with its control characters turned into spaces (as a user's name is), runs of spaces
    /// folded; nil when nothing is left or it is longer than `maximumProfileValueBytes`.
    package static func cleaned(_ text: String) -> String? {
        guard text.utf8.count <= Self.maximumProfileValueBytes else { return nil }
        guard text.containsControlCharacters else { return text.isEmpty ? nil : text }
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars { scalars.append(scalar.isControlCharacter ? " " : scalar) }
        let folded = String(scalars).split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
        return folded.isEmpty ? nil : folded
    }

    /// A custom claim's value cleaned: strings as `cleaned(_:)` (without its length limit, which the whole bounds),
    /// object keys with control characters left out, nested at most 8 deep.
    private static func cleaned(_ value: JSONValue, depth: Int) -> JSONValue? {
        guard depth < 8 else { return nil }
        switch value {
        case .string(let text):
            guard text.containsControlCharacters else { return value }
            var scalars = String.UnicodeScalarView()
            for scalar in text.unicodeScalars { scalars.append(scalar.isControlCharacter ? " " : scalar) }
            return .string(String(scalars))
        case .array(let values):
            return .array(values.compactMap { Self.cleaned($0, depth: depth + 1) })
        case .object(let members):
            var kept: [String: JSONValue] = [:]
            for (key, member) in members where !key.containsControlCharacters {
                if let cleaned = Self.cleaned(member, depth: depth + 1) { kept[key] = cleaned }
            }
            return .object(kept)
        case .null, .bool, .int, .double:
            return value
        }
    }

    /// Why `custom_claims` cannot name `name` (nil: it can): a secret, an empty or over-long name, control characters.
    package static func customClaimNameProblem(_ name: String) -> String? {
        if name.isEmpty || name.utf8.count > 64 { return "must be 1 to 64 bytes long" }
        if name.containsControlCharacters { return "must not contain control characters" }
        if Self.secretClaimNames.contains(name) { return "names a secret claim, which usher never keeps" }
        return nil
    }
}

/// The rules for `custom_claims` settings, for the configuration reader (which knows nothing of wire types).
package enum CustomClaimNames {
    /// How many names one `custom_claims` may list.
    package static var maximumCount: Int { UserClaims.maximumCustomClaimNames }

    /// Why `custom_claims` cannot name `name`, or nil when it can.
    package static func problem(with name: String) -> String? { UserClaims.customClaimNameProblem(name) }
}
