import UsherCore
import UsherProtocol

/// `delete_user` at an OpenID Connect provider: OpenID Connect defines no account deletion, so usher calls the endpoint
/// the configuration names (`delete_account_url`) with the session's access token, then revokes the session's tokens
/// (RFC 7009).
extension OIDCProvider: AccountDeleting {
    package func deletionProblem(_ identity: Identity, hasSession: Bool) -> String? {
        guard self.configuration.deleteAccountURL != nil else {
            return "provider \(self.name) has no delete_account_url: usher cannot delete accounts there "
                + "(remove_user forgets the user on this device; the account stays at the provider)"
        }
        guard hasSession else {
            return "the identity at \(self.name) is not the session's: usher holds no token for it "
                + "(log in with it first, or unlink it)"
        }
        return nil
    }

    package func deleteAccount(_ identity: Identity, session: ProviderSession?) async throws -> (any PendingWrite)? {
        guard let url = self.configuration.deleteAccountURL, let session else {
            throw ProviderError.unsupportedCredentials(
                self.deletionProblem(identity, hasSession: session != nil) ?? "cannot delete the account"
            )
        }
        let response: OIDCHTTP.Response
        do {
            response = try await self.http.delete(
                url,
                post: self.configuration.deleteAccountMethod == "POST",
                bearerToken: session.tokens.accessToken
            )
        } catch {
            throw error.providerError
        }
        switch response.status {
        case 200..<300:
            self.logger.info("account deleted at the provider", metadata: ["user.id": "\(session.userID)"])
        case 401, 403:
            throw ProviderError.providerError(
                error: "HTTP \(response.status)",
                description: "the provider refused to delete the account with the session's access token"
            )
        default:
            throw ProviderError.providerError(
                error: "HTTP \(response.status)",
                description: "the account-deletion endpoint did not delete the account"
            )
        }
        // The account is gone; its tokens should be too (a provider that deletes an account usually drops them).
        _ = await self.revoke(session)
        return nil
    }
}
