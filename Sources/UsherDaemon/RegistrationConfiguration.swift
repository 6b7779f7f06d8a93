import UsherProviders

extension DaemonConfiguration {
    /// Reads a local provider's `[providers.NAME.registration]`: `confirm`, `confirm_hook`, `reset_hook`,
    /// `hook_timeout`, `confirm_token_lifetime`, `reset_token_lifetime`.
    static func registration(
        _ section: inout ConfigSection,
        into configuration: inout LocalProviderConfiguration
    ) throws(ConfigurationError) {
        guard var registration = try section.section("registration") else { return }
        var result = AccountRegistrationConfiguration()
        if let confirm = try registration.string("confirm") {
            guard let mode = AccountRegistrationConfiguration.Confirmation(rawValue: confirm) else {
                throw registration.error("confirm", "must be \"auto\" or \"hook\"")
            }
            result.confirm = mode
        }
        let timeout = try registration.duration("hook_timeout", in: 100...300_000) ?? 10_000
        result.confirmHook = try Self.deliveryHook(&registration, "confirm_hook", timeout: timeout)
        result.resetHook = try Self.deliveryHook(&registration, "reset_hook", timeout: timeout)
        if result.confirm == .hook && result.confirmHook == nil {
            throw registration.error(
                "confirm_hook",
                "is required with confirm = \"hook\": the command that delivers the token"
            )
        }
        result.confirmTokenLifetimeMilliseconds =
            try registration.duration("confirm_token_lifetime", in: 1...(30 * 86_400_000))
            ?? result.confirmTokenLifetimeMilliseconds
        result.resetTokenLifetimeMilliseconds =
            try registration.duration("reset_token_lifetime", in: 1...(30 * 86_400_000))
            ?? result.resetTokenLifetimeMilliseconds
        try registration.finish()
        configuration.registration = result
    }

    /// A delivery hook's command: an absolute program and its arguments, run as the authentication function is.
    private static func deliveryHook(
        _ section: inout ConfigSection,
        _ key: String,
        timeout: Int64
    ) throws(ConfigurationError) -> FunctionHookConfiguration? {
        guard let command = try section.stringArray(key) else { return nil }
        guard let program = command.first, program.hasPrefix("/") else {
            throw section.error(key, "the program must be an absolute path (it is run without a shell or PATH)")
        }
        // Supervised by this very binary, as the authentication function is (`usherd function-supervisor`).
        return FunctionHookConfiguration(command: command, supervisor: "/proc/self/exe", timeoutMilliseconds: timeout)
    }
}
