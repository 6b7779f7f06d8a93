extension CreateAPIKeyRequest.Result: CustomStringConvertible {
    /// Never shows the key.
    public var description: String { "API key \(self.name) for \(self.userID)" }
}
