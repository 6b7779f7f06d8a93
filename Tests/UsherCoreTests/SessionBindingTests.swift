import Testing
import UsherCore
import UsherProtocol
import UsherStore

/// Login sessions bound to users (`open_session`, `close_session`): the seat's follow code asks which user a logind
/// session is bound to (`boundUser(logindSession:)`), and the answer survives a restart.
@Suite("Session bindings")
struct SessionBindingTests {
    @Test func aBoundLogindSessionNamesItsUserUntilItCloses() async throws {
        let harness = try await Harness()
        let ann = try await harness.login("ann@example.com")
        let bob = try await harness.login("bob@example.com")
        #expect(await harness.activeID() == bob.id)

        let (binding, change) = try await harness.registry.openSession(
            user: "ANN@example.com",
            logindSession: "c7",
            service: "login",
            peerUID: 0
        )
        #expect(change.user.id == ann.id)
        #expect(await harness.activeID() == ann.id)
        #expect(binding.id.hasPrefix("b_") && binding.id.count == 18)
        #expect(await harness.registry.boundUser(logindSession: "c7") == ann.id)
        #expect(await harness.registry.boundUser(logindSession: "c8") == nil)

        // A second session of the same logind session (a re-opened PAM session) takes over; closing it gives the
        // first one back.
        let (second, _) = try await harness.registry.openSession(user: bob.id, logindSession: "c7")
        #expect(await harness.registry.boundUser(logindSession: "c7") == bob.id)
        _ = try await harness.registry.closeSession(second.id, onClose: .keep)
        #expect(await harness.registry.boundUser(logindSession: "c7") == ann.id)

        // Durable: a restarted registry knows the binding.
        let restarted = harness.restartedRegistry()
        try await restarted.load()
        #expect(await restarted.boundUser(logindSession: "c7") == ann.id)
        #expect(await restarted.sessionBinding(binding.id)?.service == "login")

        _ = try await restarted.closeSession(binding.id, onClose: .keep)
        #expect(await restarted.boundUser(logindSession: "c7") == nil)
        await #expect(throws: SessionError.bindingNotFound(binding.id)) {
            _ = try await restarted.closeSession(binding.id, onClose: .keep)
        }
    }

    /// pam_usher logs in as root on the person's behalf and names their uid when the session opens: from then on the
    /// user is theirs (their own `usher pin set` in that session), and nobody else's, across a restart too.
    @Test func theSessionsOwnerIsThePersonLoggingInNotThePAMModule() async throws {
        let harness = try await SeatLockTests.harness()
        let ann = try await harness.login("ann@example.com")
        await #expect(throws: SessionError.notYours(userID: ann.id, action: "set the PIN of")) {
            _ = try await harness.registry.setPIN("4711", userID: ann.id, ownership: .uid(60000))
        }
        _ = try await harness.registry.openSession(user: ann.id, logindSession: "c3", peerUID: 0, ownerUID: 60000)
        _ = try await harness.registry.setPIN("4711", userID: ann.id, ownership: .uid(60000))
        await #expect(throws: SessionError.notYours(userID: ann.id, action: "set the PIN of")) {
            _ = try await harness.registry.setPIN("4711", userID: ann.id, ownership: .uid(60001))
        }
        let restarted = harness.restartedRegistry()
        try await restarted.load()
        try await restarted.useSeatLocks(SeatLockParts(store: harness.database, hasher: SeatLockTests.TestHasher()))
        _ = try await restarted.setPIN("4712", userID: ann.id, ownership: .uid(60000))
    }

    @Test func aRemovedUserIsNoLongerBound() async throws {
        let harness = try await Harness()
        let ann = try await harness.login("ann@example.com")
        _ = try await harness.registry.openSession(user: ann.id, logindSession: "c1")
        _ = try await harness.registry.removeUser(ann.id)
        #expect(await harness.registry.boundUser(logindSession: "c1") == nil)
    }

    @Test func aBindingIsNotRecordedWhenItsCommitFails() async throws {
        let harness = try await Harness()
        let ann = try await harness.login("ann@example.com")
        harness.store.failNextCommits(1)
        await #expect(throws: (any Error).self) {
            _ = try await harness.registry.openSession(user: ann.id, logindSession: "c1")
        }
        #expect(await harness.registry.boundUser(logindSession: "c1") == nil)
        #expect(try await harness.database.loadSessionBindings().isEmpty)
    }

    /// `user_status` (pam_usher's account stage) tells a session the provider ended from one never started.
    @Test func userStatusSaysWhyTheSessionEnded() async throws {
        let harness = try await Harness()
        let a = try await harness.login("a@example.com")
        #expect(try await harness.registry.userStatus(email: "A@example.com").status == "logged_in")
        #expect(try await harness.registry.userStatus(email: "b@example.com").status == "unknown")

        harness.provider.script([.refuse, .refuse])
        await #expect(throws: ProviderError.self) { try await harness.registry.refresh(userID: a.id) }
        await #expect(throws: SessionError.userLoggedOut(a.id)) { try await harness.registry.refresh(userID: a.id) }
        let revoked = try await harness.registry.userStatus(email: "a@example.com")
        #expect(
            revoked
                == UserStatusRequest.Result(
                    status: "logged_out",
                    userID: a.id,
                    email: "a@example.com",
                    ended: "session_revoked"
                )
        )

        // Logged in again, then out by request: the last ending is the one told.
        try await harness.login("a@example.com")
        _ = try await harness.registry.logout(userID: a.id)
        #expect(try await harness.registry.userStatus(email: "a@example.com").ended == "requested")
    }
}
