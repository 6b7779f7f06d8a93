import UsherCore
import UsherProviders
import UsherStore
import UsherTestSupport

/// A local provider on an in-memory database and a test clock, for the local provider's suites.
struct LocalProviderFixture {
    var provider: LocalProvider
    var database: AppDatabase
    var clock: ManualClock
    var signer: TokenSigner

    /// Refreshes as the registry does: the provider's answer, then its pending write (the grant rotation) committed.
    func refresh(_ session: ProviderSession) async throws -> RefreshedSession {
        let refreshed = try await self.provider.refresh(session)
        try await self.database.commit(
            SessionChange(
                generation: nil,
                saved: [],
                deleted: [],
                pendingWrites: refreshed.pendingWrite.map { [$0] } ?? []
            )
        )
        return refreshed
    }
}
