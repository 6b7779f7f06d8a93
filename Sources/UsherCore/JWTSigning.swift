package import JWTKit

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// jwt-kit as usher signs with it: the local provider's tokens (`TokenSigner`) and DPoP proofs (`DPoPKey`).
package enum JWTSigning {
    /// A key collection holding only `key` (under `keyID` when given), whose signatures write the header and the
    /// claims with sorted keys and unescaped slashes (a DPoP proof's `htu` is a URL), as usher always wrote them.
    ///
    /// The serializer goes with the key: jwt-kit signs with the serializer a key was added with, and uses the
    /// collection's default one only for keys added as JWKs. A new collection per call: it is an actor, and adding a
    /// key to it takes an await the keys' synchronous initialisers cannot make. It costs an allocation; the signature
    /// costs far more.
    package static func keys(_ key: ES256PrivateKey, keyID: String? = nil) async -> JWTKeyCollection {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return await JWTKeyCollection().add(
            ecdsa: key,
            kid: keyID.map { JWKIdentifier(string: $0) },
            serializer: DefaultJWTSerializer(jsonEncoder: encoder)
        )
    }
}
