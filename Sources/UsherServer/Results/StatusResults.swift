import UsherCore
import UsherProtocol

// The protocol's types for what `status` and `providers` report: one initializer per core value, the only place each
// is mapped.

extension RefreshCounters {
    init(_ refreshes: SessionRegistry.Refreshes) {
        self.init(
            scheduled: Int64(refreshes.scheduled),
            nextAt: refreshes.nextAt,
            succeeded: refreshes.succeeded,
            failed: refreshes.failed
        )
    }
}

extension ProviderInfo {
    init(_ provider: SessionRegistry.ProviderSummary) {
        self.init(
            name: provider.name,
            type: provider.type,
            credentials: provider.credentialTypes,
            default: provider.isDefault
        )
    }
}
