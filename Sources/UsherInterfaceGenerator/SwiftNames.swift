/// How the interface's names and types are spelled in Swift.
///
/// Everything here is a convention, not a list of methods: a method or field added to the interface gets its Swift
/// name and type from these rules. The few tables name what the interface cannot say (which of its types are written
/// by hand in Swift, and the Swift names of shared enums), and each entry says why.
enum SwiftNames {
    /// Words written in capitals in Swift names (`user_id` is `userID`, `CreateApiKey` is `CreateAPIKey`), as the
    /// API Design Guidelines ask for acronyms; `DPoP` is spelled as RFC 9449 spells it.
    static let acronyms: [String: String] = [
        "id": "ID", "api": "API", "uri": "URI", "url": "URL", "pin": "PIN", "jwks": "JWKS", "dpop": "DPoP",
        "sha256": "SHA256", "jwk": "JWK",
    ]

    /// The interface's types that Swift spells another way, and why.
    static let swiftTypes: [String: String] = [
        // Written by hand (Sources/UsherProtocol/User.swift): `WireWriter` writes it on the hot path, and it has
        // behaviour of its own; `InterfaceConformanceTests` checks its fields against the interface's.
        "User": "UserInfo",
        // Only inside `User`.
        "Profile": "ProfileClaims",
        // Each provider defines its own credential types (`login`'s `{"type": ...}`): passed on as JSON, never
        // decoded by the protocol layer, so that a secret it holds is never copied into a typed value.
        "Credentials": "[String: JSONValue]",
        // What an event carries depends on the event (`Event` in Sources/UsherProtocol/Event.swift writes it).
        "EventData": "[String: JSONValue]",
        // The names the protocol types had before the interface generated them, kept where a bare name would
        // collide with the core's (`Seat`, `Lease`) or say too little (`Provider`, `Peer`).
        "Provider": "ProviderInfo", "Seat": "SeatInfo", "Lease": "LeaseInfo", "ApiKey": "APIKeyInfo",
        "Jwk": "JWK", "Peer": "PeerInfo", "Program": "ProgramInfo",
    ]

    /// Types named in `swiftTypes` that are written by hand, so not generated.
    static let handWritten: Set<String> = ["User", "Profile", "Credentials", "EventData"]

    /// Enums written inline in the interface that several declarations share, by their values: generated once, at
    /// the top level, under this name. Any other inline enum is nested in its method's request type, named after its
    /// field.
    static let sharedEnums: [String: String] = [
        "block,delay": "LeaseMode",
        "authorization_code,device_code": "LoginFlow",
        // `close_session`'s `on_close`, in its parameters and its result.
        "keep,logout,remove": "CloseAction",
    ]

    /// Swift's keywords that a field may be named (`protocol`, `default`): written in backquotes.
    static let keywords: Set<String> = ["protocol", "default", "internal", "in", "is", "as", "case", "class", "func"]

    /// `user_id` → `userID`; `CreateApiKey` → `createAPIKey`.
    static func lowerCamel(_ name: String) -> String {
        let words = Self.words(name)
        guard let first = words.first else { return name }
        return first.lowercased() + words.dropFirst().map(Self.capitalized).joined()
    }

    /// `user_id` → `UserID`; `CreateApiKey` → `CreateAPIKey`.
    static func upperCamel(_ name: String) -> String {
        Self.words(name).map(Self.capitalized).joined()
    }

    /// A Varlink name (`DeleteUser`, `UserLoggedOut`) as the newline-delimited protocol spells it: `delete_user`.
    static func snakeCase(_ name: String) -> String {
        Self.words(name).map { $0.lowercased() }.joined(separator: "_")
    }

    /// A property's name as written in a declaration.
    static func property(_ field: String) -> String {
        let name = Self.lowerCamel(field)
        return Self.keywords.contains(name) ? "`\(name)`" : name
    }

    private static func capitalized(_ word: String) -> String {
        if let acronym = Self.acronyms[word.lowercased()] { return acronym }
        return word.prefix(1).uppercased() + word.dropFirst().lowercased()
    }

    /// The words of `snake_case` or `PascalCase`.
    private static func words(_ name: String) -> [String] {
        if name.contains("_") { return name.split(separator: "_").map(String.init) }
        var words: [String] = []
        for character in name {
            if character.isUppercase || words.isEmpty {
                words.append(String(character))
            } else {
                words[words.count - 1].append(character)
            }
        }
        return words
    }
}
