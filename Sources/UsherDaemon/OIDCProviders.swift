import Logging
import ServiceLifecycle
import Synchronization
import UsherCore
import UsherHTTP
import UsherProviders

/// The OpenID Connect providers the daemon built, by name.
///
/// A reload builds the provider list again; a provider whose settings did not change is kept, with its discovery
/// result, its started logins and its device logins under way. One whose section disappeared or changed is retired:
/// it stops retrying discovery (its device logins under way still finish).
final class OIDCProviders: Sendable {
    /// The background work of every OpenID Connect provider; `BackgroundWorkService` runs it.
    let background = BackgroundWork()
    private let built = Mutex<[String: OIDCProvider]>([:])

    func provider(
        name: String,
        configuration: OIDCProviderConfiguration,
        httpClient: HTTPTransport,
        clock: any SessionClock,
        logger: Logger
    ) -> OIDCProvider {
        let (provider, isNew) = self.built.withLock { built -> (OIDCProvider, Bool) in
            if let existing = built[name], existing.configuration == configuration { return (existing, false) }
            let provider = OIDCProvider(
                name: name,
                configuration: configuration,
                httpClient: httpClient,
                clock: clock,
                background: self.background,
                logger: logger
            )
            built[name]?.retire()
            built[name] = provider
            return (provider, true)
        }
        if isNew { provider.startDiscovery() }
        return provider
    }

    /// Retires every provider but `kept`.
    func retire(except kept: [OIDCProvider]) {
        let names = Set(kept.map(\.name))
        let retired = self.built.withLock { built in
            let retired = built.filter { !names.contains($0.key) }.map(\.value)
            for provider in retired { built[provider.name] = nil }
            return retired
        }
        for provider in retired { provider.retire() }
    }
}

/// Runs the providers' background work (discovery retries, device flow polling) as child tasks of this service, so
/// that a graceful shutdown cancels all of it.
struct BackgroundWorkService: Service {
    let work: BackgroundWork

    func run() async throws {
        await cancelWhenGracefulShutdown {
            await self.work.run()
        }
    }
}
