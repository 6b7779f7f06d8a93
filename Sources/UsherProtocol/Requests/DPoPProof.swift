// What `dpop_proof` checks beyond its generated type (varlink/io.usher.Session.varlink): RFC 9449's rules for the
// request it proves.

extension DPoPProofRequest {
    /// The longest `htu` accepted, in bytes.
    public static let maximumURLLength = 4096
    /// The longest `nonce` accepted, in bytes.
    public static let maximumNonceLength = 1024

    public init(
        htm: String,
        htu: String,
        nonce: String? = nil,
        userID: String? = nil,
        seat: String? = nil,
        narrowing: TokenAudience
    ) {
        self.init(
            htm: htm,
            htu: htu,
            nonce: nonce,
            userID: userID,
            seat: seat,
            audience: narrowing.audience,
            scopes: narrowing.scopes
        )
    }

    /// The narrowed token the proof is for (`ath`), as `access_token` was asked for it.
    public var narrowing: TokenAudience { TokenAudience(audience: self.audience, scopes: self.scopes) }

    /// Checks the method, the URL (keeping it without its query and fragment, which the proof leaves out: RFC 9449
    /// section 4.2), the nonce, and the narrowing.
    public mutating func validate(_ params: Params) throws(ResponseError) {
        self.htu = try Self.targetURI(self.htu)
        _ = try TokenAudience.checked(audience: self.audience, scopes: self.scopes)
        // RFC 9110 token characters; methods are short.
        guard (1...32).contains(self.htm.utf8.count),
            self.htm.utf8.allSatisfy({ Self.tokenCharacters.contains($0) })
        else { throw ParamsDecoder.invalid("htm", "params.htm must be an HTTP method, such as GET or POST") }
        if let nonce = self.nonce {
            // RFC 9449 section 8.1: NQCHAR, printable ASCII without `"` and `\`.
            guard (1...Self.maximumNonceLength).contains(nonce.utf8.count),
                nonce.utf8.allSatisfy({ (0x21...0x7E).contains($0) && $0 != 0x22 && $0 != 0x5C })
            else {
                throw ParamsDecoder.invalid(
                    "nonce",
                    "params.nonce must be the server's DPoP-Nonce: 1 to \(Self.maximumNonceLength) printable "
                        + "ASCII characters"
                )
            }
        }
    }

    /// `url` without its query and fragment, after checking that it is an absolute http(s) URL without white space
    /// or control characters.
    static func targetURI(_ url: String) throws(ResponseError) -> String {
        let bytes = Array(url.utf8)
        let lower = url.lowercased()
        let scheme = lower.hasPrefix("https://") ? 8 : lower.hasPrefix("http://") ? 7 : 0
        // An authority follows the scheme: at least one byte that does not start a path, query or fragment.
        guard bytes.count <= Self.maximumURLLength, scheme > 0, bytes.count > scheme,
            !"/?#".utf8.contains(bytes[scheme]), bytes.allSatisfy({ $0 > 0x20 && $0 != 0x7F })
        else {
            throw ParamsDecoder.invalid(
                "htu",
                "params.htu must be the request's absolute http or https URL (at most \(Self.maximumURLLength) bytes)"
            )
        }
        let end = bytes.firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? bytes.count
        return String(decoding: bytes[..<end], as: UTF8.self)
    }

    private static let tokenCharacters: Set<UInt8> = Set(
        Array("!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".utf8)
    )
}

extension DPoPProofRequest.Result: CustomStringConvertible {
    /// Never shows the proof (it is good for one request, for a short while).
    public var description: String { "DPoP proof for \(self.userID)" }
}
