import Synchronization

/// The server settings that a configuration reload may change while the daemon runs. New connections and new
/// requests read the current value; a connection keeps the line limit it started with.
package final class ServerSettings: Sendable {
    private let state: Mutex<(limits: ServerLimits, policy: AccessPolicy)>

    package init(limits: ServerLimits, policy: AccessPolicy) {
        self.state = Mutex((limits, policy))
    }

    package var limits: ServerLimits {
        get { self.state.withLock { $0.limits } }
        set { self.state.withLock { $0.limits = newValue } }
    }

    package var policy: AccessPolicy {
        get { self.state.withLock { $0.policy } }
        set { self.state.withLock { $0.policy = newValue } }
    }
}
