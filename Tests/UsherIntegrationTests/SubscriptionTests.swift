import Crypto
import Foundation
import Testing
import UsherCore
import UsherProtocol
import UsherStore
import UsherTestSupport

/// Events on the real daemon: a subscriber sees the changes another connection makes.
@Suite(.integrationHangGuard)
struct SubscriptionTests {
    @Test func aSubscriberSeesAnotherConnectionsChanges() async throws {
        try await DaemonProcess.with { daemon in
            let actor = try daemon.connect()
            let watcher = try daemon.connect()
            _ = try await actor.result("register", ["email": "a@example.com", "password": "secret123"])
            _ = try await actor.result("register", ["email": "b@example.com", "password": "secret123"])
            let subscribed = try await watcher.result("subscribe")
            #expect(subscribed["generation"] == 0)
            #expect(subscribed["subscribed"]?.arrayValue?.contains("user_logged_in") == true)

            let a = try #require(
                try await actor.result("login", SessionRulesTests.emailLogin("a@example.com"))["user"]?["id"]?
                    .stringValue
            )
            let loggedIn = try await watcher.nextEvent()
            #expect(loggedIn["event"] == "user_logged_in")
            #expect(loggedIn["generation"] == 1)
            #expect(loggedIn["data"]?["user"]?["id"]?.stringValue == a)
            let activeChanged = try await watcher.nextEvent()
            #expect(activeChanged["event"] == "active_user_changed")
            #expect(activeChanged["data"] == ["previous_user_id": nil, "user_id": .string(a)])
            #expect(activeChanged["generation"] == 1)

            let b = try #require(
                try await actor.result("login", SessionRulesTests.emailLogin("b@example.com"))["user"]?["id"]?
                    .stringValue
            )
            _ = try await watcher.nextEvent()
            _ = try await watcher.nextEvent()
            _ = try await actor.result("switch_user", ["user_id": .string(a)])
            let switched = try await watcher.nextEvent()
            #expect(switched["event"] == "active_user_changed")
            #expect(switched["generation"] == 3)
            #expect(switched["data"] == ["previous_user_id": .string(b), "user_id": .string(a)])

            _ = try await actor.result("remove_user", ["user_id": .string(a)])
            let removedEvent = try await watcher.nextEvent()
            #expect(removedEvent["event"] == "user_removed")
            #expect(removedEvent["generation"] == 4)
            let handedOver = try await watcher.nextEvent()
            #expect(handedOver["data"] == ["previous_user_id": .string(a), "user_id": .string(b)])
            #expect(handedOver["generation"] == 4)

            // The subscriber's own requests are still answered, with events kept apart.
            #expect(try await watcher.result("current_user")["user"]?["id"]?.stringValue == b)

            // A filtered subscription only gets what it asked for.
            let filtered = try daemon.connect()
            _ = try await filtered.result("subscribe", ["events": ["user_logged_out"]])
            _ = try await actor.result("logout")
            let loggedOut = try await filtered.nextEvent()
            #expect(loggedOut["event"] == "user_logged_out")
            #expect(loggedOut["data"] == ["user_id": .string(b), "reason": "requested"])
            #expect(try await filtered.errorCode("subscribe", ["events": ["nope"]]) == "invalid_params")
        }
    }
}
