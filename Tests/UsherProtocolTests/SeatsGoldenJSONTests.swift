import Foundation
import Testing
import UsherProtocol

/// Golden JSON of the seat and lease wire types: answers, events, errors and params, byte for byte.
@Suite("Golden JSON: seats and leases")
struct SeatsGoldenJSONTests {
    func line(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    @Test func currentUserNamesItsSeatOnlyWhenGiven() throws {
        let named = CurrentUserRequest.Result(generation: 3, seat: "rear", user: nil)
        #expect(
            self.line(LineCodec.encodeResult(id: .int(1), named))
                == #"{"id":1,"result":{"generation":3,"locked":false,"seat":"rear","user":null}}"# + "\n"
        )
        // The answer written on the event loop is the same bytes.
        var writer = WireWriter()
        named.write(to: &writer)
        #expect(self.line(writer.bytes) == #"{"generation":3,"locked":false,"seat":"rear","user":null}"#)
        #expect(
            self.line(LineCodec.encodeResult(id: .int(1), CurrentUserRequest.Result(generation: 3, user: nil)))
                == #"{"id":1,"result":{"generation":3,"locked":false,"user":null}}"# + "\n"
        )
    }

    @Test func userResultWithSeat() throws {
        let result = UserResult(generation: 2, seat: "driver", user: Fixtures.bareUser)
        let text = self.line(LineCodec.encodeResult(id: .int(2), result))
        #expect(text.hasPrefix(#"{"id":2,"result":{"generation":2,"seat":"driver","user":{"#))
        let decoded = try JSONDecoder().decode(
            UserResult.self,
            from: Data((#"{"generation":2,"seat":"driver","user":"# + Fixtures.bareUserJSON + "}").utf8)
        )
        #expect(decoded == result)
    }

    @Test func listSeats() throws {
        let result = ListSeatsRequest.Result(
            generation: 7,
            defaultSeat: "driver",
            seats: [
                SeatInfo(name: "driver", source: "config", present: true, userID: "u_1"),
                SeatInfo(name: "seat1", source: "logind", present: false, userID: nil),
            ]
        )
        let expected =
            #"{"id":3,"result":{"default_seat":"driver","generation":7,"seats":[{"name":"driver","present":true,"#
            + #""source":"config","user_id":"u_1"},{"name":"seat1","present":false,"source":"logind","user_id":null}]}}"#
            + "\n"
        #expect(self.line(LineCodec.encodeResult(id: .int(3), result)) == expected)
        struct Line: Decodable { var result: ListSeatsRequest.Result }
        #expect(try JSONDecoder().decode(Line.self, from: Data(expected.utf8)).result == result)
    }

    @Test func leases() throws {
        #expect(
            self.line(LineCodec.encodeResult(id: .int(4), InhibitRequest.Result(lease: "l_1", seat: "seat0")))
                == #"{"id":4,"result":{"lease":"l_1","seat":"seat0"}}"# + "\n"
        )
        #expect(
            self.line(LineCodec.encodeResult(id: .int(5), ReleaseRequest.Result(lease: "l_1", released: true)))
                == #"{"id":5,"result":{"lease":"l_1","released":true}}"# + "\n"
        )
        let lease = LeaseInfo(
            lease: "l_1",
            seat: "seat0",
            mode: .delay,
            who: "sync",
            why: "upload",
            pid: 42,
            uid: 1000,
            executable: nil,
            since: Fixtures.t0
        )
        #expect(
            self.line(LineCodec.encodeResult(id: .int(6), ListLeasesRequest.Result(leases: [lease])))
                == #"{"id":6,"result":{"leases":[{"executable":null,"lease":"l_1","mode":"delay","pid":42,"#
                + #""seat":"seat0","since":"2027-01-15T08:00:00.000Z","uid":1000,"who":"sync","why":"upload"}]}}"#
                + "\n"
        )
    }

    @Test func inhibitedCarriesItsHolders() throws {
        let lease = LeaseInfo(
            lease: "l_1",
            seat: "seat0",
            mode: .block,
            who: "pay",
            why: "payment",
            pid: 42,
            uid: 1000,
            executable: "/usr/bin/pay",
            since: Fixtures.t0
        )
        let error = ResponseError(
            .inhibited,
            "1 lease(s) hold the active user of seat seat0 in place",
            data: ["seat": "seat0", "holders": [lease.jsonValue]]
        )
        #expect(
            self.line(LineCodec.encodeError(id: .int(7), error))
                == #"{"error":{"code":"inhibited","data":{"holders":[{"executable":"/usr/bin/pay","lease":"l_1","#
                + #""mode":"block","pid":42,"seat":"seat0","since":"2027-01-15T08:00:00.000Z","uid":1000,"who":"pay","#
                + #""why":"payment"}],"seat":"seat0"},"message":"1 lease(s) hold the active user of seat seat0 in "#
                + #"place"},"id":7}"# + "\n"
        )
    }

    @Test func seatEvents() throws {
        let cases: [(Event, String)] = [
            (
                Event(generation: 4, seat: "rear", .activeUserChanged(previousUserID: "u_1", userID: nil)),
                #"{"data":{"previous_user_id":"u_1","seat":"rear","user_id":null},"event":"active_user_changed","generation":4}"#
            ),
            (
                Event(generation: 5, seat: "seat1", .seatAdded(source: "logind")),
                #"{"data":{"seat":"seat1","source":"logind"},"event":"seat_added","generation":5}"#
            ),
            (
                Event(generation: 5, seat: "seat1", .seatRemoved),
                #"{"data":{"seat":"seat1"},"event":"seat_removed","generation":5}"#
            ),
            (
                Event(
                    generation: 6,
                    seat: "seat0",
                    .switchPending(previousUserID: "u_1", userID: "u_2", deadline: Fixtures.t0)
                ),
                #"{"data":{"deadline":"2027-01-15T08:00:00.000Z","previous_user_id":"u_1","seat":"seat0","user_id":"u_2"},"#
                    + #""event":"switch_pending","generation":6}"#
            ),
            (
                Event(generation: 6, seat: "seat0", .leaseBroken(lease: "l_1", reason: "forced")),
                #"{"data":{"lease":"l_1","reason":"forced","seat":"seat0"},"event":"lease_broken","generation":6}"#
            ),
        ]
        for (event, expected) in cases {
            #expect(self.line(LineCodec.encode(event)) == expected + "\n")
            #expect(try JSONDecoder().decode(Event.self, from: Data(expected.utf8)) == event)
        }
    }

    @Test func newParams() throws {
        let switched = try SwitchUserRequest(
            params: Params(["user_id": "u", "seat": "rear", "move": true, "force": true])
        )
        #expect(switched.seat == "rear" && switched.move == true && switched.force == true)
        #expect(switched.params == Params(["user_id": "u", "seat": "rear", "move": true, "force": true]))
        #expect(try SwitchUserRequest(params: Params(["user_id": "u"])).params == Params(["user_id": "u"]))
        #expect(throws: ResponseError(.invalidParams, "params.move must be a boolean, not string")) {
            try SwitchUserRequest(params: Params(["user_id": "u", "move": "yes"]))
        }
        #expect(throws: ResponseError(.invalidParams, "params.mode must be \"block\" or \"delay\"")) {
            try InhibitRequest(params: Params(["mode": "stop", "who": "a", "why": "b"]))
        }
        #expect(throws: ResponseError.self) {
            try InhibitRequest(params: Params(["mode": "block", "who": "", "why": "b"]))
        }
        #expect(try SubscribeRequest(params: Params(["seats": ["rear"]])).seats == ["rear"])
        #expect(try CurrentUserRequest(params: Params(["seat": "rear"])).seat == "rear")
    }
}
