import UsherProtocol

/// The account lifecycle: linked identities and account deletion.
extension UsherClient {
    /// Links the identity that `credentials` prove to a logged-in user (by default the active user), as the SDKs'
    /// `linkUser` does: the user keeps its id, and its session then belongs to that identity.
    public func linkCredentials(
        _ credentials: [String: JSONValue],
        provider: String? = nil,
        userID: String? = nil
    ) async throws -> UserResult {
        try await self.send(LinkCredentialsRequest(userID: userID, provider: provider, credentials: credentials))
    }

    /// Removes one identity from a user; never its last one.
    public func unlinkIdentity(
        userID: String,
        provider: String,
        subject: String
    ) async throws -> UnlinkIdentityRequest.Result {
        try await self.send(UnlinkIdentityRequest(userID: userID, provider: provider, subject: subject))
    }

    /// Deletes the user's account at its providers, then removes it from the device.
    public func deleteUser(id: String) async throws -> DeleteUserRequest.Result {
        try await self.send(DeleteUserRequest(userID: id))
    }
}
