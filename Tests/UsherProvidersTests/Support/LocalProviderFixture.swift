import Crypto
import NIOPosix
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

    /// Runs `body` with a local provider of `configuration`: a cheap scrypt cost on a one-thread pool (shut down
    /// afterwards), an in-memory database and a manual clock.
    static func with<T>(
        _ configuration: LocalProviderConfiguration,
        _ body: (LocalProviderFixture) async throws -> T
    ) async throws -> T {
        let pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
        let clock = ManualClock()
        let database = try AppDatabase.inMemory()
        let signer = TokenSigner(privateKey: P256.Signing.PrivateKey())
        let provider = LocalProvider(
            name: "local",
            configuration: configuration,
            database: database,
            signer: signer,
            hasher: PasswordHasher(
                threadPool: pool,
                parameters: PasswordHasher.Parameters(logN: 10, blockSize: 8, parallelism: 1)
            ),
            clock: clock
        )
        do {
            let result = try await body(
                LocalProviderFixture(provider: provider, database: database, clock: clock, signer: signer)
            )
            try await pool.shutdownGracefully()
            return result
        } catch {
            try await pool.shutdownGracefully()
            throw error
        }
    }

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
