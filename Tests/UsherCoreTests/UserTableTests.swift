import Testing
import UsherCore
import UsherProtocol
import UsherTestSupport

/// The state's table of users (its own hash table, `UserTable`) holds exactly the users put and not removed, through
/// growth and removals that shift the entries after them: checked against a dictionary over random changes.
@Suite(.timeLimit(.minutes(1)))
struct UserTableTests {
    static func user(_ index: Int, name: String) -> User {
        var user = SessionStateTests.user(index)
        user.name = name
        return user
    }

    static func expectSame(_ state: SessionState, _ expected: [String: String], _ ids: Range<Int>) {
        #expect(state.count == expected.count)
        #expect(Dictionary(uniqueKeysWithValues: state.users.map { ($0.id, $0.name ?? "") }) == expected)
        for index in ids {
            #expect(state["u\(index)"]?.name == expected["u\(index)"], "u\(index)")
        }
    }

    @Test(arguments: [1, 2, 3])
    func holdsWhatWasPutAndNotRemoved(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        var state = SessionState()
        var expected: [String: String] = [:]
        let ids = 0..<300
        for step in 0..<20_000 {
            let index = Int.random(in: ids, using: &random)
            // Removals a little less often than puts, so that the table grows through several sizes and also
            // empties runs of neighbouring entries.
            if Int.random(in: 0..<5, using: &random) < 2 {
                let removed = state.remove("u\(index)")
                #expect(removed?.name == expected.removeValue(forKey: "u\(index)"))
            } else {
                let name = "n\(step)"
                let previous = expected["u\(index)"]
                expected["u\(index)"] = name
                state.put(Self.user(index, name: name))
                #expect(state["u\(index)"]?.name == name, "replaced \(previous ?? "nothing")")
            }
            if step % 1_000 == 0 { Self.expectSame(state, expected, ids) }
        }
        Self.expectSame(state, expected, ids)
        for id in expected.keys { state.remove(id) }
        Self.expectSame(state, [:], ids)
    }

    @Test func loadingKeepsEveryUser() {
        let state = SessionState(generation: 1, users: (0..<5_000).map { Self.user($0, name: "n\($0)") })
        #expect(state.count == 5_000)
        #expect(state["u0"]?.name == "n0")
        #expect(state["u4999"]?.name == "n4999")
        #expect(state["u5000"] == nil)
        #expect(Set(state.users.map(\.id)).count == 5_000)
    }
}
