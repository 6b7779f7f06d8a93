import Testing
import UsherCore
import UsherProtocol
import UsherTestSupport

/// Changes that arrive while one is being written share the next commit, and each is still answered only once it is
/// durable; a batch that cannot be written is retried change by change, so only the change that fails fails.
@Suite(.timeLimit(.minutes(1)))
struct GroupCommitTests {
    /// Starts `count` logins (`q0@…`, `q1@…`) and waits until every one of them is queued behind the held commit.
    private static func queueLogins(
        _ harness: Harness,
        _ count: Int,
        in group: inout ThrowingTaskGroup<UserInfo?, any Error>
    ) async {
        for index in 0..<count {
            group.addTask {
                do { return try await harness.login("q\(index)@example.com") } catch { return nil }
            }
        }
        #expect(await waitUntil("\(count) logins are queued") { await harness.registry.queuedChanges == count })
    }

    @Test func changesQueuedBehindACommitShareTheNextOne() async throws {
        let harness = try await Harness()
        harness.store.holdNextCommit()
        let first = Task { try await harness.login("first@example.com") }
        #expect(await waitUntil("the first commit is held") { harness.store.isHolding })
        // Nothing is answered or visible before its commit.
        #expect(await harness.registry.currentUser().user == nil)

        let answers = try await withThrowingTaskGroup(of: UserInfo?.self) { group in
            await Self.queueLogins(harness, 10, in: &group)
            harness.store.release()
            var answers: [UserInfo] = []
            for try await answer in group { answers.append(try #require(answer)) }
            return answers
        }
        _ = try await first.value
        // Two transactions: the first change alone, then the ten that queued behind it, together.
        #expect(harness.store.commits.count == 2)
        #expect(harness.store.commits.last?.saved.count == 10)
        // Each answer is that user as committed, and the database holds every one of them.
        let stored = try await harness.database.loadSessions()
        #expect(stored.users.count == 11)
        #expect(stored.generation == 11)
        #expect(Set(answers.map(\.id)).count == 10)
        #expect(answers.allSatisfy { $0.state == .loggedIn })
        // Logins are applied in the order they were computed: the last one is active.
        let active = try #require(await harness.registry.currentUser().user)
        #expect(active.id == stored.users.max { $0.activeGeneration < $1.activeGeneration }?.id)
        #expect(await harness.users().count == 11)
    }

    @Test func aBatchThatCannotBeWrittenIsRetriedChangeByChange() async throws {
        let harness = try await Harness()
        harness.store.holdNextCommit()
        let first = Task { try await harness.login("first@example.com") }
        #expect(await waitUntil("the first commit is held") { harness.store.isHolding })

        let answers = try await withThrowingTaskGroup(of: UserInfo?.self) { group in
            await Self.queueLogins(harness, 3, in: &group)
            // The batch of three fails to commit, and so does the first of them when tried on its own.
            harness.store.failNextCommits(2)
            harness.store.release()
            var answers: [UserInfo?] = []
            for try await answer in group { answers.append(answer) }
            return answers
        }
        _ = try await first.value
        // One login failed; the other two were committed, each in its own transaction.
        #expect(answers.count(where: { $0 == nil }) == 1)
        let succeeded = answers.compactMap { $0 }
        #expect(succeeded.count == 2)
        #expect(harness.store.failedCommits == 2)
        #expect(harness.store.commits.count == 3)
        // Memory and disk agree: the failed login left no trace, and the generation counts only committed changes.
        let stored = try await harness.database.loadSessions()
        #expect(Set(stored.users.map(\.id)) == Set(await harness.users().map(\.id)))
        #expect(stored.users.count == 3)
        #expect(stored.generation == 3)
        #expect(await harness.generation() == 3)
        let active = try #require(await harness.registry.currentUser().user)
        #expect(stored.users.contains { $0.id == active.id })
    }
}
