// FoundationEssentials, not Foundation: the CLI links this module (see LineCodec.swift).
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A JSON object of claims about a user: `profile` (the standard OpenID Connect claims) and `custom_data` (the claims
/// a provider's `custom_claims` names).
///
/// Held as its canonical JSON text (sorted keys, as `LineCodec` writes it), not as a dictionary: 100,000 users each
/// holding a tree of `JSONValue`s would cost more memory than their sessions, and `list_users` writes the text as it
/// is (`WireWriter`). The empty object is a small string that allocates nothing, so users without a profile cost
/// nothing more.
public struct UserClaims: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The canonical JSON text of the object (`{}` when empty).
    public let json: String

    /// No claims.
    public static let empty = UserClaims(verifiedJSON: "{}")

    private init(verifiedJSON json: String) {
        self.json = json
    }

    /// The claims, encoded canonically.
    public init(_ claims: [String: JSONValue]) {
        guard !claims.isEmpty else {
            self = .empty
            return
        }
        var line = LineCodec.line(JSONValue.object(claims))
        if line.last == UInt8(ascii: "\n") { line.removeLast() }
        self.json = String(decoding: line, as: UTF8.self)
    }

    /// Claims as the store keeps them: text that `json` wrote, taken as it is (re-encoding 100,000 users' claims
    /// would slow the daemon's start). Anything that is not an object's text reads as no claims.
    public init(storedJSON json: String?) {
        guard let json, json != "{}", json.utf8.first == UInt8(ascii: "{"), json.utf8.last == UInt8(ascii: "}")
        else {
            self = .empty
            return
        }
        self.init(verifiedJSON: json)
    }

    /// The claims as values (decoded from the text each time: for callers that look at a few users).
    public var claims: [String: JSONValue] {
        guard !self.isEmpty else { return [:] }
        return (try? JSONDecoder().decode([String: JSONValue].self, from: Data(self.json.utf8))) ?? [:]
    }

    public var isEmpty: Bool { self.json == "{}" }

    public subscript(name: String) -> JSONValue? { self.claims[name] }

    public var description: String { self.json }

    public init(from decoder: any Decoder) throws {
        self.init(try decoder.singleValueContainer().decode([String: JSONValue].self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(self.claims)
    }
}
