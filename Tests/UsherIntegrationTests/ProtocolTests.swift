import Crypto
import Foundation
import Testing
import UsherCore
import UsherProtocol
import UsherStore
import UsherTestSupport

/// The wire protocol on the real daemon: framing, pipelining, malformed input, and long answers.
@Suite(.integrationHangGuard)
struct ProtocolTests {
    @Test func pipelinedRequestsAreAnsweredInOrder() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            // Twenty requests in one write, with string and number ids and a CRLF line ending among them.
            var batch = ""
            for index in 0..<20 {
                let id = index.isMultiple(of: 2) ? "\(index)" : "\"r\(index)\""
                let method = ["hello", "current_user", "list_users", "status"][index % 4]
                batch += "{\"id\":\(id),\"method\":\"\(method)\"}" + (index == 7 ? "\r\n" : "\n")
            }
            try client.send(raw: Array(batch.utf8))
            for index in 0..<20 {
                let response = try await client.readObject()
                let expected: JSONValue = index.isMultiple(of: 2) ? .int(Int64(index)) : .string("r\(index)")
                #expect(response["id"] == expected)
                #expect(response["result"] != nil)
            }
        }
    }

    @Test func malformedLinesGetErrorsAndTheConnectionCarriesOn() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            let cases: [(String, String)] = [
                ("not json", "invalid_request"),
                ("[1,2,3]", "invalid_request"),
                ("\"hello\"", "invalid_request"),
                ("{\"id\":1}", "invalid_request"),
                ("{\"id\":2,\"method\":42}", "invalid_request"),
                ("{\"id\":3,\"method\":\"teleport\"}", "unknown_method"),
                ("{\"id\":4,\"method\":\"switch_user\"}", "invalid_params"),
                ("{\"id\":5,\"method\":\"switch_user\",\"params\":{\"user_id\":7}}", "invalid_params"),
                ("{\"id\":6,\"method\":\"login\",\"params\":[]}", "invalid_params"),
                ("{\"id\":7,\"method\":\"access_token\",\"params\":{\"min_valid\":-5}}", "invalid_params"),
                ("{\"id\":{\"a\":1},\"method\":\"hello\"}", "invalid_request"),
                ("{\"id\":8,\"method\":\"hello\"", "invalid_request"),
                (String(repeating: "[", count: 500) + String(repeating: "]", count: 500), "invalid_request"),
            ]
            for (line, code) in cases {
                try client.send(line)
                let response = try await client.readObject()
                #expect(response["error"]?["code"]?.stringValue == code, "for \(line)")
                #expect(response["error"]?["message"]?.stringValue?.isEmpty == false)
            }
            // The id is echoed when it could be read.
            try client.send("{\"id\":\"abc\",\"method\":\"nope\"}")
            #expect(try await client.readObject()["id"] == "abc")
            // Unknown fields are ignored; invalid UTF-8 and NUL bytes are refused without harm.
            try client.send("{\"id\":9,\"method\":\"hello\",\"extra\":{\"x\":[1,2]}}")
            #expect(try await client.readObject()["result"]?["server"] == "usherd")
            try client.send(
                raw: [UInt8](#"{"id":10,"method":"hel"#.utf8) + [0xFF, 0xFE] + [UInt8](#"lo"}"#.utf8) + [10]
            )
            #expect(try await client.readObject()["error"]?["code"] == "invalid_request")
            try client.send(raw: [UInt8](#"{"id":11,"method":"hello"}"#.utf8) + [0, 10])
            #expect(try await client.readObject()["error"]?["code"] == "invalid_request")
            // Blank lines are skipped; the connection still works.
            try client.send("")
            #expect(try await client.result("hello")["protocol"] == 1)
        }
    }

    @Test func aLineOverTheLimitIsRefusedAndTheConnectionClosed() async throws {
        try await DaemonProcess.with(config: "[limits]\nmax_line_bytes = 2048\n") { daemon in
            let client = try daemon.connect()
            // Exactly at the limit is fine.
            let padding = String(repeating: "x", count: 2048 - #"{"method":"hello","pad":""}"#.utf8.count)
            try client.send(#"{"method":"hello","pad":"\#(padding)"}"#)
            #expect(try await client.readObject()["result"] != nil)
            // One byte more, without a newline: refused as soon as it is over, then the connection closes.
            try client.send(raw: Array(repeating: UInt8(ascii: "x"), count: 2049))
            #expect(try await client.readObject()["error"]?["code"] == "line_too_long")
            #expect(try await client.readLine() == nil)
            // The daemon carries on for everyone else.
            #expect(try await daemon.connect().result("hello")["server"] == "usherd")
        }
    }

    @Test func aRequestSplitByteByByteIsAnswered() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            for byte in Array(#"{"id":"slow","method":"hello"}"#.utf8) + [10] {
                try client.send(raw: [byte])
            }
            #expect(try await client.readObject()["id"] == "slow")
        }
    }

    /// Lines cut anywhere between writes (inside a `\r\n`, inside a line, the last one never terminated) are put
    /// back together. Each write but the first is sent once the daemon has answered a line of the write before it,
    /// so that it has read that write, cut included, before the next one arrives.
    @Test func linesCutAcrossReadsAreJoined() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            try client.send(raw: Array("{\"id\":1,\"method\":\"hello\"}\n{\"id\":2,\"method\":\"hello\"}\r".utf8))
            #expect(try await client.readObject()["id"] == 1)
            try client.send(raw: Array("\n{\"id\":3,\"meth".utf8))
            #expect(try await client.readObject()["id"] == 2)
            try client.send(raw: Array("od\":\"hello\"}\n{\"id\":4,".utf8))
            #expect(try await client.readObject()["id"] == 3)
            try client.send(raw: Array("\"method\":\"hello\"}".utf8))
            client.closeWrite()
            let last = try await client.readObject()
            #expect(last["id"] == 4)
            #expect(last["error"] == nil)
            #expect(try await client.readLine() == nil)
        }
    }

    /// Writes `count` logged-out users, each with a long name, straight into a fresh state directory (before the
    /// daemon starts), so that `list_users` answers with several megabytes.
    static func seedUsers(_ count: Int, into stateDirectory: String) async throws {
        #expect(mkdir(stateDirectory, 0o700) == 0)
        let database = try AppDatabase(path: "\(stateDirectory)/usher.sqlite")
        let createdAt = Timestamp(millisecondsSinceEpoch: 1_700_000_000_000)
        let padding = String(repeating: "n", count: 2000)
        let users = (1...count).map { index in
            User(
                id: User.id(provider: "local", subject: "s\(index)"),
                provider: "local",
                subject: "s\(index)",
                kind: "email_password",
                email: "user\(index)@example.com",
                name: "User \(index) \(padding)",
                state: .loggedOut,
                addedGeneration: Int64(index),
                createdAt: createdAt,
                lastLoginAt: nil,
                lastActiveAt: nil,
                activeGeneration: 0,
                tokens: nil,
                providerData: nil
            )
        }
        try await database.commit(SessionChange(generation: Int64(count), saved: users, deleted: []))
    }

    /// A daemon whose `list_users` answer is several megabytes: far more than a socket buffer holds.
    static func withManyUsers(_ body: (DaemonProcess) async throws -> Void) async throws {
        let daemon = try DaemonProcess()
        try await Self.seedUsers(Self.manyUsers, into: daemon.stateDirectory)
        try await DaemonProcess.using(daemon) { daemon in
            try await daemon.start()
            try await body(daemon)
        }
    }

    static let manyUsers = 2000

    @Test func aPeerThatClosesItsSendingSideGetsEveryAnswerInFull() async throws {
        try await Self.withManyUsers { daemon in
            let client = try daemon.connect()
            client.timeout = hangGuard
            // Two requests, the last without its newline, then the end of the input (what `socat` does).
            try client.send(raw: Array("{\"id\":1,\"method\":\"list_users\"}\n{\"id\":2,\"method\":\"status\"}".utf8))
            client.closeWrite()
            let line = try #require(try await client.readLine())
            #expect(line.utf8.count > 4_000_000, "several megabytes: many times what a socket buffer holds")
            let users = try JSONDecoder().decode(JSONValue.self, from: Data(line.utf8))
            #expect(users["id"] == 1)
            #expect(users["result"]?["users"]?.arrayValue?.count == Self.manyUsers)
            let status = try await client.readObject()
            #expect(status["id"] == 2)
            #expect(status["result"]?["users"]?["logged_out"] == .int(Int64(Self.manyUsers)))
            // Then, and only then, the daemon closes.
            #expect(try await client.readLine() == nil)
        }
    }

    /// A reader with a tiny receive buffer makes the long answer back up and drain again and again while it is
    /// written piece by piece: it still gets every piece once, in order.
    @Test func aSlowReaderGetsALongListWholeAndInOrder() async throws {
        try await Self.withManyUsers { daemon in
            let slow = try daemon.connect()
            slow.shrinkReceiveBuffer()
            for round in 1...3 {
                try slow.send("{\"id\":\(round),\"method\":\"list_users\"}")
                let line = try #require(try await slow.readLine())
                let answer = try JSONDecoder().decode(JSONValue.self, from: Data(line.utf8))
                #expect(answer["id"] == .int(Int64(round)))
                let ids = answer["result"]?["users"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
                #expect(ids.count == Self.manyUsers)
                #expect(Set(ids).count == Self.manyUsers, "a user listed twice")
            }
        }
    }

    @Test func socatGetsTheWholeAnswerAndItsLastUnterminatedRequestAnswered() async throws {
        try await Self.withManyUsers { daemon in
            // `-t 60`: socat's own wait for the rest of the answer after its input ended (0.5 s by default) is a
            // hang guard here, not something the test measures.
            let socat = ["-t", "60", "-", "UNIX-CONNECT:\(daemon.socketPath)"]
            let big = try await runProcess(
                "/usr/bin/socat",
                socat,
                stdin: "{\"method\":\"list_users\"}\n",
                timeout: .seconds(300)
            )
            #expect(big.status == 0)
            let lines = big.stdout.split(separator: "\n")
            #expect(lines.count == 1)
            let users = try JSONDecoder().decode(JSONValue.self, from: Data((lines.first ?? "").utf8))
            #expect(users["result"]?["users"]?.arrayValue?.count == Self.manyUsers)

            let unterminated = try await runProcess(
                "/usr/bin/socat",
                socat,
                stdin: "{\"method\":\"status\"}",
                timeout: .seconds(300)
            )
            #expect(unterminated.status == 0)
            let status = try JSONDecoder().decode(JSONValue.self, from: Data(unterminated.stdout.utf8))
            #expect(status["result"]?["users"]?["logged_out"] == .int(Int64(Self.manyUsers)))
        }
    }

    @Test func socatCanQueryTheDaemon() async throws {
        try await DaemonProcess.with { daemon in
            // `-t 60`: socat waits for the answers after its input ended until the daemon closes the connection (it
            // does once both are answered); 60 s is a hang guard. socat's own 0.5 s default would make the test
            // depend on how fast the login is.
            let output = try await runProcess(
                "/usr/bin/socat",
                ["-t", "60", "-", "UNIX-CONNECT:\(daemon.socketPath)"],
                stdin:
                    "{\"method\":\"current_user\"}\n{\"method\":\"login\",\"params\":{\"credentials\":{\"type\":\"anonymous\"}}}\n"
            )
            #expect(output.status == 0)
            let lines = output.stdout.split(separator: "\n")
            #expect(lines.count == 2)
            #expect(lines.first == #"{"id":null,"result":{"generation":0,"locked":false,"user":null}}"#)
            #expect(lines.last?.contains(#""kind":"anonymous""#) == true)
        }
    }
}
