// What `access_token` and `dpop_proof` check beyond their generated types (varlink/io.usher.Session.varlink).

extension AccessTokenRequest {
    /// The default for `min_valid`, in seconds.
    public static let defaultMinimumValidity: Int64 = 60
    /// The largest `min_valid`: a year and a day.
    public static let minimumValidityRange: ClosedRange<Int64> = 0...(366 * 86_400)

    public init(userID: String? = nil, minValid: Int64? = nil, seat: String? = nil, narrowing: TokenAudience) {
        self.init(
            userID: userID,
            seat: seat,
            minValid: minValid,
            audience: narrowing.audience,
            scopes: narrowing.scopes
        )
    }

    /// A token for this audience and no more than these scopes, instead of the session's own
    /// (docs/least-privilege.md).
    public var narrowing: TokenAudience { TokenAudience(audience: self.audience, scopes: self.scopes) }

    public mutating func validate(_ params: Params) throws(ResponseError) {
        try ParamsDecoder.check(self.minValid, in: Self.minimumValidityRange, "min_valid")
        _ = try TokenAudience.checked(audience: self.audience, scopes: self.scopes)
    }
}

extension AccessTokenRequest.Result: CustomStringConvertible {
    /// Never shows the token.
    public var description: String { "access token for \(self.userID), expires \(self.expiresAt)" }
}
