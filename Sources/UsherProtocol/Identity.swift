// `Identity` is generated from varlink/io.usher.Session.varlink; what it does besides carrying its fields.

extension Identity {
    public var isAnonymous: Bool { self.kind == "anonymous" }

    /// Whether two identities are the same account (the kind is how it was proven, not who it is).
    public func isSameAccount(as other: Identity) -> Bool {
        self.provider == other.provider && self.subject == other.subject
    }
}
