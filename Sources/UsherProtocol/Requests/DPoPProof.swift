/// `dpop_proof`: a fresh DPoP proof (RFC 9449) for one HTTP request, signed with the key the user's session is bound
/// to, with `ath` naming the session's current access token. The program sends the token and this proof; the key never
/// leaves the daemon.
public struct DPoPProofRequest: UsherRequest {
    public static let method = Method.dpopProof
    /// The longest `htu` accepted, in bytes.
    public static let maximumURLLength = 4096
    /// The longest `nonce` accepted, in bytes.
    public static let maximumNonceLength = 1024

    /// `htm`: the request's HTTP method (`GET`, `POST`, ...).
    public var method: String
    /// `htu`: the request's http(s) URL; a query and a fragment are left out of the proof (RFC 9449 section 4.2).
    public var url: String
    /// The `DPoP-Nonce` the server answered with, when it asked for one (`use_dpop_nonce`).
    public var nonce: String?
    /// Default: the active user.
    public var userID: String?
    /// The seat whose active user is meant when `user_id` is absent. Default: the caller's seat, else the default.
    public var seat: String?
    /// The narrowed token the proof is for (`ath`), as `access_token` was asked for it.
    public var narrowing: TokenAudience

    public init(
        method: String,
        url: String,
        nonce: String? = nil,
        userID: String? = nil,
        seat: String? = nil,
        narrowing: TokenAudience = TokenAudience()
    ) {
        self.method = method
        self.url = url
        self.nonce = nonce
        self.userID = userID
        self.seat = seat
        self.narrowing = narrowing
    }

    public init(params: Params) throws(ResponseError) {
        self.method = try params.requiredString("htm")
        self.url = try Self.targetURI(try params.requiredString("htu"))
        self.nonce = try params.optionalString("nonce")
        self.userID = try params.optionalString("user_id")
        self.seat = try params.optionalString("seat")
        self.narrowing = try TokenAudience(params: params)
        // RFC 9110 token characters; methods are short.
        guard (1...32).contains(self.method.utf8.count),
            self.method.utf8.allSatisfy({ Self.tokenCharacters.contains($0) })
        else { throw ResponseError(.invalidParams, "params.htm must be an HTTP method, such as GET or POST") }
        if let nonce = self.nonce {
            // RFC 9449 section 8.1: NQCHAR, printable ASCII without `"` and `\`.
            guard (1...Self.maximumNonceLength).contains(nonce.utf8.count),
                nonce.utf8.allSatisfy({ (0x21...0x7E).contains($0) && $0 != 0x22 && $0 != 0x5C })
            else {
                throw ResponseError(
                    .invalidParams,
                    "params.nonce must be the server's DPoP-Nonce: 1 to \(Self.maximumNonceLength) printable "
                        + "ASCII characters"
                )
            }
        }
    }

    public var params: Params {
        var params = Params()
        params.set("htm", self.method)
        params.set("htu", self.url)
        params.set("nonce", self.nonce)
        params.set("user_id", self.userID)
        params.set("seat", self.seat)
        self.narrowing.set(in: &params)
        return params
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
            throw ResponseError(
                .invalidParams,
                "params.htu must be the request's absolute http or https URL (at most \(Self.maximumURLLength) bytes)"
            )
        }
        let end = bytes.firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? bytes.count
        return String(decoding: bytes[..<end], as: UTF8.self)
    }

    private static let tokenCharacters: Set<UInt8> = Set(
        Array("!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".utf8)
    )

    public struct Result: Sendable, Hashable, Codable, CustomStringConvertible {
        public var userID: String
        /// The proof JWT: the value of the request's `DPoP` header.
        public var proof: String
        /// When the access token the proof's `ath` names expires: a token fetched before it was refreshed does not
        /// match the proof.
        public var accessTokenExpiresAt: Timestamp

        public init(userID: String, proof: String, accessTokenExpiresAt: Timestamp) {
            self.userID = userID
            self.proof = proof
            self.accessTokenExpiresAt = accessTokenExpiresAt
        }

        private enum CodingKeys: String, CodingKey {
            case userID = "user_id"
            case proof
            case accessTokenExpiresAt = "access_token_expires_at"
        }

        /// Never shows the proof (it is good for one request, for a short while).
        public var description: String { "DPoP proof for \(self.userID)" }
    }
}
