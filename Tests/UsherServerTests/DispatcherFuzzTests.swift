import Crypto
import Foundation
import Logging
import NIOPosix
import Testing
import UsherCore
import UsherProtocol
import UsherProviders
import UsherServer
import UsherStore
import UsherTestSupport

/// A structure-aware mutation fuzzer for the request decoder and the dispatcher.
///
/// It starts from a valid request for every method, mutates it (byte flips, insertions of hostile bytes, deletions,
/// splices, deep nesting, huge numbers, long strings, duplicate keys), and feeds each line to the real dispatcher over
/// a real registry. Every line must get exactly one well-formed answer with a documented error code, and a peer without
/// permissions must never change anything. `make test` runs a short pass; `make fuzz` runs long ones
/// (`USHER_FUZZ_ITERATIONS`, `USHER_FUZZ_SEED` to replay a failure).
@Suite(.timeLimit(.minutes(30)))
struct DispatcherFuzzTests {

    static let corpus: [String] = [
        #"{"id":1,"method":"hello"}"#,
        #"{"id":"a","method":"providers"}"#,
        #"{"id":2,"method":"register","params":{"email":"fuzz@example.com","password":"secret123"}}"#,
        #"{"id":3,"method":"login","params":{"credentials":{"type":"anonymous"}}}"#,
        #"{"id":4,"method":"login","params":{"provider":"local","credentials":{"type":"email_password","email":"fuzz@example.com","password":"secret123"}}}"#,
        #"{"id":5,"method":"login","params":{"credentials":{"type":"api_key","key":"usher_abc"}}}"#,
        #"{"id":6,"method":"current_user"}"#,
        #"{"id":7,"method":"list_users","params":{}}"#,
        #"{"id":8,"method":"switch_user","params":{"user_id":"u_00","if_generation":3}}"#,
        #"{"id":9,"method":"logout","params":{"user_id":"u_00"}}"#,
        #"{"id":10,"method":"remove_user","params":{"user_id":"u_00"}}"#,
        #"{"id":11,"method":"access_token","params":{"min_valid":60}}"#,
        #"{"id":12,"method":"refresh"}"#,
        #"{"id":13,"method":"create_api_key","params":{"name":"k"}}"#,
        #"{"id":14,"method":"list_api_keys"}"#,
        #"{"id":15,"method":"delete_api_key","params":{"name":"k"}}"#,
        #"{"id":16,"method":"jwks"}"#,
        #"{"id":17,"method":"subscribe","params":{"events":["user_logged_in"]}}"#,
        #"{"id":18,"method":"status"}"#,
    ]

    static let fragments: [String] = [
        "null", "true", "-0", "1e999", "-1e999", "99999999999999999999999999", "0.0000001", "\"\\u0000\"",
        "\"\\ud800\"", "\"\\x\"", "[]", "{}", String(repeating: "[", count: 80) + String(repeating: "]", count: 80),
        "\"" + String(repeating: "é", count: 3000) + "\"", "{\"a\":1,\"a\":2}", ",", ":", "\"", "\\", "{", "}",
        "\"method\":\"hello\"", "\"params\":[]", "\"id\":{}",
    ]

    static func mutate(_ input: [UInt8], _ random: inout SeededGenerator) -> [UInt8] {
        var bytes = input
        for _ in 0..<Int.random(in: 1...4, using: &random) {
            switch Int.random(in: 0..<7, using: &random) {
            case 0 where !bytes.isEmpty:
                let index = Int.random(in: 0..<bytes.count, using: &random)
                bytes[index] ^= UInt8(1 << Int.random(in: 0..<8, using: &random))
            case 1:
                let hostile: [UInt8] = [0x00, 0xFF, 0xC0, 0x80, 0xED, 0xA0, 0x22, 0x5C, 0x7B, 0x7D, 0x5B, 0x5D, 0x0D]
                bytes.insert(
                    hostile.randomElement(using: &random)!,
                    at: Int.random(in: 0...bytes.count, using: &random)
                )
            case 2 where bytes.count > 1:
                let start = Int.random(in: 0..<bytes.count, using: &random)
                let end = min(bytes.count, start + Int.random(in: 1...16, using: &random))
                bytes.removeSubrange(start..<end)
            case 3:
                let fragment = Array(Self.fragments.randomElement(using: &random)!.utf8)
                bytes.insert(contentsOf: fragment, at: Int.random(in: 0...bytes.count, using: &random))
            case 4:
                let other = Array(Self.corpus.randomElement(using: &random)!.utf8)
                let cut = Int.random(in: 0...bytes.count, using: &random)
                bytes = Array(bytes[..<cut]) + Array(other[Int.random(in: 0...other.count, using: &random)...])
            case 5 where !bytes.isEmpty:
                bytes = Array(bytes[..<Int.random(in: 0..<bytes.count, using: &random)])
            default:
                // Replace a JSON value after a colon with a hostile fragment.
                if let colon = bytes.indices.filter({ bytes[$0] == UInt8(ascii: ":") }).randomElement(using: &random) {
                    let end =
                        bytes[(colon + 1)...].firstIndex { $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: "}") }
                        ?? bytes.endIndex
                    bytes.replaceSubrange(
                        (colon + 1)..<end,
                        with: Array(Self.fragments.randomElement(using: &random)!.utf8)
                    )
                }
            }
        }
        // A line never contains its terminator.
        return bytes.filter { $0 != UInt8(ascii: "\n") }
    }

    @Test func everyLineGetsOneWellFormedAnswerAndAPeerWithoutPermissionsChangesNothing() async throws {
        let environment = ProcessInfo.processInfo.environment
        let iterations = Int(environment["USHER_FUZZ_ITERATIONS"] ?? "") ?? 4000
        let seed = UInt64(environment["USHER_FUZZ_SEED"] ?? "") ?? UInt64.random(in: 0...UInt64.max)
        var random = SeededGenerator(seed: seed)

        let pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
        let database = try AppDatabase.inMemory()
        let clock = ManualClock()
        let provider = LocalProvider(
            name: "local",
            configuration: LocalProviderConfiguration(issuer: "usherd:local"),
            database: database,
            signer: TokenSigner(privateKey: P256.Signing.PrivateKey()),
            hasher: PasswordHasher(threadPool: pool, parameters: .init(logN: 4, blockSize: 1, parallelism: 1)),
            clock: clock
        )
        let logger = Logger(label: "fuzz", factory: { _ in SwiftLogNoOpLogHandler() })
        let registry = SessionRegistry(
            store: database,
            providers: [provider],
            defaultProvider: "local",
            clock: clock,
            logger: logger
        )
        try await registry.load()
        let dispatcher = Dispatcher(
            registry: registry,
            version: "fuzz",
            settings: ServerSettings(limits: ServerLimits(), policy: AccessPolicy(daemonUID: 0)),
            connectionCount: { 1 }
        )
        // No rules: the policy gives the stranger nothing and root everything.
        let stranger = Dispatcher.Context(peer: PeerCredentials(uid: 4242, gid: 4242, pid: 1), logger: logger)
        let owner = Dispatcher.Context(peer: PeerCredentials(uid: 0, gid: 0, pid: 1), logger: logger)
        let codes = Set(ErrorCode.all.map(\.rawValue))

        for iteration in 0..<iterations {
            let base = Array(Self.corpus.randomElement(using: &random)!.utf8)
            let line = iteration.isMultiple(of: 5) ? base : Self.mutate(base, &random)
            let asStranger = Bool.random(using: &random)
            let generationBefore = await registry.currentGeneration
            let outcome = await dispatcher.handle(line: line, context: asStranger ? stranger : owner)
            let response: [UInt8]
            switch outcome {
            case .response(let reply): response = reply.line
            case .subscribed(let reply, let subscription):
                response = reply.line
                registry.events.cancel(subscription.id)
            case .streamed(var chunks):
                var line: [UInt8] = []
                while let chunk = chunks.next() { line += chunk }
                response = line
            }
            let context =
                "seed \(seed), iteration \(iteration), input \(String(decoding: line, as: UTF8.self).prefix(300))"
            #expect(response.last == UInt8(ascii: "\n"), "\(context)")
            #expect(response.dropLast().allSatisfy { $0 != UInt8(ascii: "\n") }, "\(context)")
            guard case .object(let object)? = try? JSONDecoder().decode(JSONValue.self, from: Data(response)) else {
                Issue.record("not a JSON object: \(context)")
                break
            }
            #expect(object.keys.contains("id"), "\(context)")
            #expect((object["result"] == nil) != (object["error"] == nil), "\(context)")
            if let code = object["error"]?["code"]?.stringValue {
                #expect(codes.contains(code), "undocumented code \(code): \(context)")
            }
            if case .success(let request) = Result(catching: { try LineCodec.decodeRequest(line) }) {
                #expect(object["id"] == request.id.map(Self.json) ?? .null, "\(context)")
            }
            if asStranger {
                #expect(await registry.currentGeneration == generationBefore, "a stranger changed state: \(context)")
                if object["error"] == nil {
                    #expect(object["result"]?["server"] == "usherd", "only hello may succeed: \(context)")
                }
            }
        }
        try await pool.shutdownGracefully()
    }

    static func json(_ id: RequestID) -> JSONValue {
        switch id {
        case .int(let value): .int(value)
        case .double(let value): .double(value)
        case .string(let value): .string(value)
        // The number as the answer's JSON, read back, spells it.
        case .number(let text): (try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))) ?? .null
        }
    }
}
