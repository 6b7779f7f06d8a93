// What pam_usher's methods check beyond their generated types (varlink/io.usher.Session.varlink).

extension OpenSessionRequest {
    public mutating func validate(_ params: Params) throws(ResponseError) {
        try ParamsDecoder.check(self.uid, in: 0...Int64(UInt32.max - 1), "uid")
        for (key, value) in [("user", self.user), ("logind_session", self.logindSession), ("service", self.service)] {
            guard let value else { continue }
            guard !value.isEmpty, value.utf8.count <= 256,
                !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
            else {
                throw ParamsDecoder.invalid(key, "params.\(key) must be 1 to 256 bytes without control characters")
            }
        }
    }
}

extension CloseSessionRequest {
    /// What happens to the user when its login session closes (`on_close`, default `keep`).
    public var action: CloseAction { self.onClose ?? .keep }
}

extension UserStatusRequest {
    public init(email: String) {
        self.init(email: email, unixUser: nil)
    }

    public init(unixUser: String) {
        self.init(email: nil, unixUser: unixUser)
    }

    public mutating func validate(_ params: Params) throws(ResponseError) {
        guard (self.email == nil) != (self.unixUser == nil) else {
            throw ParamsDecoder.invalid("email", "params.email or params.unix_user is required (one of them)")
        }
    }
}
