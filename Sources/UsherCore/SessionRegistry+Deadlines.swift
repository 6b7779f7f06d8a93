/// Putting a logged-in user's next deadline (refresh, retry or session end) on the refresh queue.
extension SessionRegistry {
    func scheduleTimer(for user: User) {
        var status = self.tokenStatus[user.id] ?? TokenStatus()
        if let retryAt = status.retryAt, status.failures > 0 {
            // A retry is pending for this same session: keep it.
            status.nextRefreshAt = retryAt
            self.tokenStatus[user.id] = status
            self.scheduler.schedule(user.id, at: retryAt)
            return
        }
        guard let deadline = self.configuration.deadlines.nextDeadline(for: user) else {
            status.nextRefreshAt = nil
            self.tokenStatus[user.id] = status
            self.scheduler.cancel(user.id)
            return
        }
        // The rules' own deadline: clients are shown it without the status having to keep it.
        status.nextRefreshAt = nil
        self.tokenStatus[user.id] = status
        self.scheduler.schedule(user.id, at: deadline)
    }
}
