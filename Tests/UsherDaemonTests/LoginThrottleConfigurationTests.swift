import Testing
import UsherServer

@testable import UsherDaemon

/// `[login_throttle]` as the daemon reads it: defaults, every key, and errors that name the key and the file.
@Suite(.timeLimit(.minutes(1)))
struct LoginThrottleConfigurationTests {
    @Test func defaultsWithoutTheSection() throws {
        let configuration = try DaemonConfiguration(toml: "", file: "usherd.toml")
        #expect(configuration.loginThrottle == LoginThrottleSettings())
        #expect(configuration.loginThrottle.enabled)
        #expect(configuration.loginThrottle.accountFreeFailures == 5)
        #expect(configuration.loginThrottle.lockout == .seconds(900))
    }

    @Test func everyKey() throws {
        let configuration = try DaemonConfiguration(
            toml: """
                [login_throttle]
                enabled = true
                account_free_failures = 1
                account_lockout_failures = 4
                peer_free_failures = 7
                peer_lockout_failures = 30
                first_delay = "250ms"
                max_delay = "10s"
                lockout = "1h"
                forget_after = "1d"
                max_tracked = 500
                """,
            file: "usherd.toml"
        )
        let settings = configuration.loginThrottle
        #expect(settings.accountFreeFailures == 1 && settings.accountLockoutFailures == 4)
        #expect(settings.peerFreeFailures == 7 && settings.peerLockoutFailures == 30)
        #expect(settings.firstDelay == .milliseconds(250) && settings.maximumDelay == .seconds(10))
        #expect(settings.lockout == .seconds(3600) && settings.forgetAfter == .seconds(86_400))
        #expect(settings.maximumTracked == 500)
    }

    @Test(arguments: [
        ("colour = 1", "login_throttle.colour: unknown key"),
        ("account_free_failures = -1", "login_throttle.account_free_failures: must be between 0 and 1000"),
        ("peer_lockout_failures = \"many\"", "login_throttle.peer_lockout_failures: must be an integer"),
        ("first_delay = \"1\"", "login_throttle.first_delay: must be a duration"),
        ("lockout = \"8d\"", "login_throttle.lockout: must be between 1s and 7d"),
        ("lockout = \"2h\"", "login_throttle.forget_after: must not be shorter than lockout"),
        ("first_delay = \"2m\"", "login_throttle.max_delay: must not be shorter than first_delay"),
        ("max_tracked = 1", "login_throttle.max_tracked: must be between 16 and 1000000"),
        ("enabled = \"no\"", "login_throttle.enabled: must be true or false"),
    ])
    func badValuesNameTheKeyAndTheFile(line: String, message: String) {
        do {
            _ = try DaemonConfiguration(toml: "[login_throttle]\n\(line)\n", file: "/etc/usher/usherd.toml")
            Issue.record("\(line) was accepted")
        } catch {
            #expect(error.description.hasPrefix("/etc/usher/usherd.toml: " + message), "\(error)")
        }
    }
}
