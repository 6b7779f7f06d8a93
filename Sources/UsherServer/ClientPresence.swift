import Synchronization

/// Whether a connection's peer is still there to take its answers, for the requests that outlive the connection.
///
/// Why requests outlive it: a request usherd has read in full is carried out to the end whether or not its client
/// stays (`RequestHandler`). A client that closes as soon as it has written its request (`socat` whose wait ran out, a
/// program that exits) must find its account created, its login made and its password counted as right, not a change
/// cancelled halfway and audited as an error or, worse, as `invalid_credentials` that the login throttle then holds
/// against the account. Only the answer is dropped, and the audit record says `client_gone=true`.
///
/// The one kind of request that ends with its client instead waits for something outside the daemon on that client's
/// behalf: `login_wait` waits for a person to approve a login at the provider, and leaving (Ctrl-C in
/// `usher login --device`) is how that person's client cancels it (`cancellingWhenGone`).
package final class ClientPresence: Sendable {
    private struct State {
        var gone = false
        var whenGone: [UInt64: @Sendable () -> Void] = [:]
        var next: UInt64 = 0
    }

    private let state = Mutex(State())

    package init() {}

    /// Whether the connection has closed.
    package var isGone: Bool { self.state.withLock { $0.gone } }

    /// The connection closed: from now on its requests' answers go nowhere.
    func markGone() {
        let actions = self.state.withLock { state -> [@Sendable () -> Void] in
            guard !state.gone else { return [] }
            state.gone = true
            defer { state.whenGone = [:] }
            return Array(state.whenGone.values)
        }
        for action in actions { action() }
    }

    /// Runs `body` in a task of its own that is cancelled when the client leaves (at once if it has left already),
    /// or when the calling task is.
    package func cancellingWhenGone<T: Sendable>(
        _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let task = Task { try await body() }
        let key = self.state.withLock { state -> UInt64? in
            guard !state.gone else { return nil }
            state.next += 1
            state.whenGone[state.next] = { task.cancel() }
            return state.next
        }
        if key == nil { task.cancel() }
        defer {
            if let key { _ = self.state.withLock { $0.whenGone.removeValue(forKey: key) } }
        }
        return try await withTaskCancellationHandler {
            try await task.value
        } onCancel: {
            task.cancel()
        }
    }
}
