import Foundation
import Testing
import UsherProtocol

/// Golden JSON of every event.
@Suite("Golden JSON: events")
struct GoldenEventTests {
    @Test func userLoggedInEvent() throws {
        try expectEvent(
            Event(generation: 3, .userLoggedIn(user: Fixtures.fullUser)),
            #"{"data":{"user":"# + Fixtures.fullUserJSON + #"},"event":"user_logged_in","generation":3}"# + "\n"
        )
    }

    @Test func activeUserChangedEvent() throws {
        try expectEvent(
            Event(generation: 4, .activeUserChanged(previousUserID: "u_01", userID: "u_02")),
            #"{"data":{"previous_user_id":"u_01","user_id":"u_02"},"event":"active_user_changed","generation":4}"#
                + "\n"
        )
        try expectEvent(
            Event(generation: 5, .activeUserChanged(previousUserID: nil, userID: "u_01")),
            #"{"data":{"previous_user_id":null,"user_id":"u_01"},"event":"active_user_changed","generation":5}"#
                + "\n"
        )
        try expectEvent(
            Event(generation: 6, .activeUserChanged(previousUserID: "u_01", userID: nil)),
            #"{"data":{"previous_user_id":"u_01","user_id":null},"event":"active_user_changed","generation":6}"#
                + "\n"
        )
    }

    @Test func userLoggedOutEvent() throws {
        try expectEvent(
            Event(generation: 7, .userLoggedOut(userID: "u_01", reason: .requested)),
            #"{"data":{"reason":"requested","user_id":"u_01"},"event":"user_logged_out","generation":7}"# + "\n"
        )
        try expectEvent(
            Event(generation: 8, .userLoggedOut(userID: "u_01", reason: .sessionRevoked)),
            #"{"data":{"reason":"session_revoked","user_id":"u_01"},"event":"user_logged_out","generation":8}"#
                + "\n"
        )
        try expectEvent(
            Event(generation: 9, .userLoggedOut(userID: "u_01", reason: .refreshTokenExpired)),
            #"{"data":{"reason":"refresh_token_expired","user_id":"u_01"},"event":"user_logged_out","generation":9}"#
                + "\n"
        )
    }

    @Test func userRemovedEvent() throws {
        try expectEvent(
            Event(generation: 10, .userRemoved(userID: "u_02")),
            #"{"data":{"reason":"requested","user_id":"u_02"},"event":"user_removed","generation":10}"# + "\n"
        )
        try expectEvent(
            Event(generation: 11, .userRemoved(userID: "u_02", reason: .deleted)),
            #"{"data":{"reason":"deleted","user_id":"u_02"},"event":"user_removed","generation":11}"# + "\n"
        )
        try expectEvent(
            Event(generation: 12, .userRemoved(userID: "u_02", reason: .loggedOut)),
            #"{"data":{"reason":"logged_out","user_id":"u_02"},"event":"user_removed","generation":12}"# + "\n"
        )
    }

    @Test func userChangedEvent() throws {
        try expectEvent(
            Event(generation: 13, .userChanged(user: Fixtures.fullUser)),
            #"{"data":{"user":"# + Fixtures.fullUserJSON + #"},"event":"user_changed","generation":13}"# + "\n"
        )
    }

    @Test func tokenRefreshedEvent() throws {
        try expectEvent(
            Event(generation: 10, .tokenRefreshed(userID: "u_01", accessTokenExpiresAt: Fixtures.at(3_600_000))),
            #"{"data":{"access_token_expires_at":"2027-01-15T09:00:00.000Z","user_id":"u_01"},"#
                + #""event":"token_refreshed","generation":10}"# + "\n"
        )
    }

    @Test func refreshFailedEvent() throws {
        try expectEvent(
            Event(
                generation: 11,
                .refreshFailed(
                    userID: "u_01",
                    code: .providerUnavailable,
                    message: "https://id.example.com/token timed out",
                    retryAt: Fixtures.at(90_000)
                )
            ),
            #"{"data":{"code":"provider_unavailable","message":"https://id.example.com/token timed out","#
                + #""retry_at":"2027-01-15T08:01:30.000Z","user_id":"u_01"},"event":"refresh_failed","generation":11}"#
                + "\n"
        )
        try expectEvent(
            Event(
                generation: 12,
                .refreshFailed(userID: "u_01", code: .invalidCredentials, message: "revoked", retryAt: nil)
            ),
            #"{"data":{"code":"invalid_credentials","message":"revoked","retry_at":null,"user_id":"u_01"},"#
                + #""event":"refresh_failed","generation":12}"# + "\n"
        )
    }

    @Test func daemonStoppingEvent() throws {
        try expectEvent(
            Event(generation: 13, .daemonStopping),
            #"{"data":{},"event":"daemon_stopping","generation":13}"# + "\n"
        )
    }

    @Test func seatLockEvents() throws {
        try expectEvent(
            Event(generation: 14, seat: "seat0", .seatLocked(by: "usherd")),
            #"{"data":{"by":"usherd","seat":"seat0"},"event":"seat_locked","generation":14}"# + "\n"
        )
        try expectEvent(
            Event(generation: 14, seat: "seat0", .seatUnlocked(by: "pin")),
            #"{"data":{"by":"pin","seat":"seat0"},"event":"seat_unlocked","generation":14}"# + "\n"
        )
    }

    @Test func eventNamesMatchPayloads() {
        let events: [Event] = [
            Event(generation: 0, .userLoggedIn(user: Fixtures.bareUser)),
            Event(generation: 0, .activeUserChanged(previousUserID: nil, userID: nil)),
            Event(generation: 0, .userLoggedOut(userID: "u", reason: .requested)),
            Event(generation: 0, .userRemoved(userID: "u")),
            Event(generation: 0, .userChanged(user: Fixtures.bareUser)),
            Event(generation: 0, .tokenRefreshed(userID: "u", accessTokenExpiresAt: Fixtures.t0)),
            Event(generation: 0, .refreshFailed(userID: "u", code: .internal, message: "", retryAt: nil)),
            Event(generation: 0, .daemonStopping),
            Event(generation: 0, seat: "s", .seatAdded(source: "logind")),
            Event(generation: 0, seat: "s", .seatRemoved),
            Event(generation: 0, seat: "s", .switchPending(previousUserID: nil, userID: nil, deadline: Fixtures.t0)),
            Event(generation: 0, seat: "s", .leaseBroken(lease: "l_1", reason: "forced")),
            Event(generation: 0, seat: "s", .seatLocked(by: "logind")),
            Event(generation: 0, seat: "s", .seatUnlocked(by: "pin")),
        ]
        #expect(events.map(\.name) == EventName.allCases)
    }
}
