import Foundation
import Testing
import UsherCore
import UsherServer

@testable import UsherDaemon

/// `[seats]`, `[leases]` and `seats` in access rules as the daemon reads them.
@Suite(.timeLimit(.minutes(1)))
struct SeatsConfigurationTests {
    @Test func defaultsWithoutTheSections() throws {
        let configuration = try DaemonConfiguration(toml: "", file: "usherd.toml")
        #expect(configuration.seats == SeatConfiguration(source: .config, names: [], defaultSeat: "seat0"))
        #expect(!configuration.seats.namesSeats, "one seat: answers as before")
        #expect(configuration.leases == LeaseConfiguration(maximumDelayMilliseconds: 5000, maximumPerUID: 16))
    }

    @Test func everyKey() throws {
        let configuration = try DaemonConfiguration(
            toml: """
                [seats]
                source = "logind"
                names = ["driver", "rear-left"]
                default = "driver"
                [leases]
                max_delay = "60s"
                max_per_uid = 2
                [[access.rule]]
                uid = 1000
                allow = ["read"]
                seats = ["rear-left"]
                """,
            file: "usherd.toml"
        )
        #expect(
            configuration.seats
                == SeatConfiguration(source: .logind, names: ["driver", "rear-left"], defaultSeat: "driver")
        )
        #expect(configuration.leases == LeaseConfiguration(maximumDelayMilliseconds: 60_000, maximumPerUID: 2))
        #expect(configuration.accessRules.first?.seats == ["rear-left"])
    }

    @Test(arguments: [
        ("[seats]\nsource = \"udev\"\n", "seats.source"),
        ("[seats]\nnames = [\"rear left\"]\n", "seats.names"),
        ("[leases]\nmax_delay = \"61s\"\n", "leases.max_delay"),
        ("[leases]\nmax_per_uid = 0\n", "leases.max_per_uid"),
        ("[[access.rule]]\nuid = 1\nallow = [\"read\"]\nseats = []\n", "seats"),
    ])
    func badValuesNameTheirKey(toml: String, key: String) throws {
        do {
            _ = try DaemonConfiguration(toml: toml, file: "usherd.toml")
            Issue.record("accepted: \(toml)")
        } catch {
            #expect("\(error)".contains(key), "\(error)")
        }
    }

    /// The sample configuration's [seats] and [leases] are the defaults.
    @Test func theSampleConfigurationSaysTheDefaults() throws {
        let sample = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("config/usherd.toml")
        let text = try String(contentsOf: sample, encoding: .utf8)
        let configuration = try DaemonConfiguration(toml: text, file: "usherd.toml")
        #expect(configuration.seats == SeatConfiguration())
        #expect(configuration.leases == LeaseConfiguration())
    }
}
