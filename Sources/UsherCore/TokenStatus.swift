import UsherProtocol

extension SessionRegistry {
    /// The in-memory refresh state of a logged-in user (not persisted: rebuilt from expiries at start).
    struct TokenStatus {
        var refreshing = false
        var failures = 0
        var retryAt: Timestamp?
        var lastError: ErrorCode?
        /// A deadline other than the one the rules give (a retry, a start-up spread); nil for the rules' own.
        var nextRefreshAt: Timestamp?
        /// A refresh the provider answered that could not be stored yet: stored at the next attempt instead of
        /// asking the provider again. Its tokens are never handed out before they are durable. Boxed: it is rare,
        /// and every logged-in user has a status.
        var unstoredBox: Unstored?
        /// The provider's last refusal of a refresh (`ProviderError.rejected`): the same one again ends the session.
        var lastRefusal: String?

        var unstored: RefreshedSession? {
            get { self.unstoredBox?.session }
            set { self.unstoredBox = newValue.map(Unstored.init) }
        }

        /// Whether there is nothing here that the rules do not say already: such a status is not kept.
        var isPlain: Bool {
            !self.refreshing && self.failures == 0 && self.retryAt == nil && self.lastError == nil
                && self.nextRefreshAt == nil && self.unstoredBox == nil && self.lastRefusal == nil
        }

        /// What clients see of it.
        var view: SessionView.TokenView {
            SessionView.TokenView(
                refreshing: self.refreshing,
                retryAt: self.retryAt,
                lastError: self.lastError,
                nextRefreshAt: self.nextRefreshAt
            )
        }
    }

    final class Unstored {
        let session: RefreshedSession

        init(_ session: RefreshedSession) {
            self.session = session
        }
    }

    /// The refresh state of every user that has one of its own (a plain status is not kept). Each change is published
    /// to the view at once: refresh state is in memory only, so there is no commit to wait for.
    struct TokenStatusTable {
        private(set) var entries: [String: TokenStatus] = [:]
        private let view: SessionView

        init(view: SessionView) {
            self.view = view
        }

        subscript(userID: String) -> TokenStatus? {
            get { self.entries[userID] }
            set { self.store(newValue, for: userID) }
        }

        subscript(userID: String, default defaultValue: @autoclosure () -> TokenStatus) -> TokenStatus {
            get { self.entries[userID] ?? defaultValue() }
            set { self.store(newValue, for: userID) }
        }

        private mutating func store(_ status: TokenStatus?, for userID: String) {
            guard let status, !status.isPlain else {
                self.removeValue(forKey: userID)
                return
            }
            self.entries[userID] = status
            self.view.publish(tokenView: status.view, of: userID)
        }

        mutating func removeValue(forKey userID: String) {
            guard self.entries.removeValue(forKey: userID) != nil else { return }
            self.view.publish(tokenView: nil, of: userID)
        }
    }
}
