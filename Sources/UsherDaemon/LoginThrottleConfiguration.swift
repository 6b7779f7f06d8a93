import UsherServer

extension DaemonConfiguration {
    /// `[login_throttle]`: every key optional, each checked against its documented range; `forget_after` must be at
    /// least `lockout` (else a lockout would end with a clean slate) and `max_delay` at least `first_delay`.
    static func loginThrottle(_ section: inout ConfigSection) throws(ConfigurationError) -> LoginThrottleSettings {
        var settings = LoginThrottleSettings()
        settings.enabled = try section.bool("enabled") ?? settings.enabled
        settings.accountFreeFailures =
            try section.int("account_free_failures", in: 0...1000) ?? settings.accountFreeFailures
        settings.accountLockoutFailures =
            try section.int("account_lockout_failures", in: 1...100_000) ?? settings.accountLockoutFailures
        settings.peerFreeFailures = try section.int("peer_free_failures", in: 0...100_000) ?? settings.peerFreeFailures
        settings.peerLockoutFailures =
            try section.int("peer_lockout_failures", in: 1...1_000_000) ?? settings.peerLockoutFailures
        if let delay = try section.duration("first_delay", in: 10...3_600_000) {
            settings.firstDelay = .milliseconds(delay)
        }
        if let delay = try section.duration("max_delay", in: 10...86_400_000) {
            settings.maximumDelay = .milliseconds(delay)
        }
        if let lockout = try section.duration("lockout", in: 1000...(7 * 86_400_000)) {
            settings.lockout = .milliseconds(lockout)
        }
        if let forget = try section.duration("forget_after", in: 1000...(30 * 86_400_000)) {
            settings.forgetAfter = .milliseconds(forget)
        }
        settings.maximumTracked = try section.int("max_tracked", in: 16...1_000_000) ?? settings.maximumTracked
        guard settings.maximumDelay >= settings.firstDelay else {
            throw section.error("max_delay", "must not be shorter than first_delay")
        }
        guard settings.forgetAfter >= settings.lockout else {
            throw section.error("forget_after", "must not be shorter than lockout")
        }
        return settings
    }
}
