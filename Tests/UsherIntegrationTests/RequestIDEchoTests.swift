import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// A request's `id` comes back exactly as it was sent, whatever its size or spelling: a client matches answers to
/// requests by it, and one whose id came back as `1.2345678901234568e+29` can match nothing.
@Suite(.integrationHangGuard)
struct RequestIDEchoTests {
    /// Number ids that are not 64-bit integers, as a client may spell them.
    static let numberIDs = [
        "123456789012345678901234567890", "-123456789012345678901234567890", "9223372036854775808",
        "18446744073709551616", "1.50", "1e30", "1E+2", "-0", "-0.0", "0.1000000000000000055511151231257827",
    ]

    @Test func numberIDsAreEchoedAsTheirExactText() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            for id in Self.numberIDs {
                // An answer from the snapshot (written by the hot path), one from the registry, and an error.
                for (method, head) in [
                    ("current_user", #"{"id":\#(id),"result":"#),
                    ("status", #"{"id":\#(id),"result":"#),
                    ("list_users", #"{"id":\#(id),"result":"#),
                    ("no_such_method", #"{"error":"#),
                ] {
                    try client.send(#"{"id":\#(id),"method":"\#(method)"}"#)
                    let line = try #require(try await client.readLine())
                    #expect(line.hasPrefix(head), "\(method) with id \(id): \(line)")
                    if method == "no_such_method" {
                        #expect(line.hasSuffix(#","id":\#(id)}"#), "\(method) with id \(id): \(line)")
                    }
                }
            }
            // Ids the daemon always echoed stay as they were.
            try client.send(#"{"id":42,"method":"current_user"}"#)
            #expect(try await client.readLine()?.hasPrefix(#"{"id":42,"result":"#) == true)
            try client.send(#"{"id":"x","method":"current_user"}"#)
            #expect(try await client.readLine()?.hasPrefix(#"{"id":"x","result":"#) == true)
        }
    }

    @Test func aLineThatIsNotARequestStillEchoesItsID() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            let id = "123456789012345678901234567890"
            try client.send(#"{"id":\#(id),"method":7}"#)
            let line = try #require(try await client.readLine())
            #expect(line.contains(#""code":"invalid_request""#), "\(line)")
            #expect(line.hasSuffix(#","id":\#(id)}"#), "\(line)")
        }
    }
}
