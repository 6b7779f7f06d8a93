import Foundation
import UsherProtocol

/// The claims of a JWT, unverified: for tests that check what a token says (a signature check is the subject of
/// tests of its own).
package enum JWTPayload {
    package static func claims(of token: String) throws -> JSONValue {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3 else { throw TestSupportError("not a JWT: \(parts.count) parts") }
        var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64) else { throw TestSupportError("the payload is not base64url") }
        return try JSONDecoder().decode(JSONValue.self, from: data)
    }
}
