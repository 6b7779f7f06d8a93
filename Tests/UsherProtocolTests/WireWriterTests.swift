import Foundation
import Testing
import UsherProtocol

/// The hot reads are written by `WireWriter`, everything else by `LineCodec`: both must give the same bytes for every
/// value, or a client would see the wire format change with the method it called.
@Suite("WireWriter")
struct WireWriterTests {
    /// Strings that exercise every escaping rule: quotes, backslashes, each control character, slashes (not escaped),
    /// DEL, non-ASCII and astral characters, and the empty string.
    static let awkwardStrings: [String] =
        [
            "", "plain", "joe@example.com", "a\"quote", "back\\slash", "slash/es", "tab\there", "line\nbreak",
            "del\u{7F}", "ünïcödé", "emoji 🎉", "\u{2028}\u{2029}",
        ] + (0..<0x20).map { "c\(String(UnicodeScalar(UInt8($0))))c" }

    static func user(_ text: String, _ index: Int) -> UserInfo {
        let time = Timestamp(millisecondsSinceEpoch: 1_790_000_000_000 + Int64(index) * 1_234_567)
        return UserInfo(
            id: "u_\(index)\(text)",
            provider: "local\(text)",
            kind: index.isMultiple(of: 2) ? "email_password" : "anonymous",
            email: index.isMultiple(of: 3) ? nil : "\(text)@example.com",
            name: index.isMultiple(of: 4) ? nil : text,
            state: [UserState.loggedIn, .loggedOut, .removed][index % 3],
            active: index.isMultiple(of: 5),
            createdAt: time,
            lastLoginAt: index.isMultiple(of: 2) ? time.adding(milliseconds: 1) : nil,
            lastActiveAt: index.isMultiple(of: 3) ? nil : time.adding(milliseconds: 2),
            accessTokenExpiresAt: index.isMultiple(of: 2) ? time.adding(milliseconds: 3_600_000) : nil,
            refreshTokenExpiresAt: index.isMultiple(of: 3) ? time.adding(milliseconds: 86_400_000) : nil,
            tokenState: [TokenState.fresh, .refreshing, .retrying, .none][index % 4],
            nextRefreshAt: index.isMultiple(of: 2) ? time.adding(milliseconds: -5) : nil,
            retryAt: index.isMultiple(of: 7) ? time : nil,
            lastRefreshError: index.isMultiple(of: 7) ? .providerUnavailable : nil
        )
    }

    static let ids: [RequestID?] = [
        nil, .int(0), .int(-42), .int(Int64.max), .int(Int64.min), .string("a\"b\u{1}"), .double(1.5),
        .number("123456789012345678901234567890"), .number("1.50"), .number("-0"),
    ]

    /// A `number` id is written as the text it came in, by LineCodec (results, errors, requests) and WireWriter alike.
    @Test func numberIDsAreWrittenAsTheirText() {
        let id = RequestID.number("-1.2345678901234567890E+29")
        let text = "-1.2345678901234567890E+29"
        let result = StatusRequest.Result(
            version: "1",
            uptimeSeconds: 0,
            generation: 0,
            users: .init(loggedIn: 0, loggedOut: 0),
            activeUserID: nil,
            connections: 0,
            refresh: .init(scheduled: 0, nextAt: nil, succeeded: 0, failed: 0)
        )
        let line = String(decoding: LineCodec.encodeResult(id: id, result), as: UTF8.self)
        #expect(line.hasPrefix(#"{"id":\#(text),"result":{"#), "\(line)")
        let error = String(decoding: LineCodec.encodeError(id: id, ResponseError(.conflict, "x")), as: UTF8.self)
        #expect(error == #"{"error":{"code":"conflict","message":"x"},"id":\#(text)}"# + "\n")
        let request = String(decoding: LineCodec.encode(Request(id: id, method: "status")), as: UTF8.self)
        #expect(request == #"{"id":\#(text),"method":"status"}"# + "\n")
        let written = String(decoding: WireWriter.responseLine(id: id, resultJSON: Array("{}".utf8)), as: UTF8.self)
        #expect(written == #"{"id":\#(text),"result":{}}"# + "\n")
    }

    private func expectSame(_ written: [UInt8], _ encoded: [UInt8], _ comment: Comment) {
        #expect(
            String(decoding: written, as: UTF8.self) == String(decoding: encoded, as: UTF8.self),
            comment
        )
    }

    @Test func currentUserMatchesLineCodec() {
        for (index, text) in Self.awkwardStrings.enumerated() {
            for user in [Self.user(text, index), nil] {
                let result = CurrentUserRequest.Result(generation: Int64(index) * 1_000_003, user: user)
                var writer = WireWriter()
                result.write(to: &writer)
                for id in Self.ids {
                    self.expectSame(
                        WireWriter.responseLine(id: id, resultJSON: writer.bytes),
                        LineCodec.encodeResult(id: id, result),
                        "current_user with \(text.debugDescription), id \(String(describing: id))"
                    )
                }
            }
        }
    }

    /// `login` and `switch_user` answer with a user (profile and custom data included), written by `WireWriter` too.
    @Test func userResultMatchesLineCodec() {
        for (index, text) in Self.awkwardStrings.enumerated() {
            var user = Self.user(text, index)
            user.profile = UserClaims(["name": .string(text), "email_verified": .bool(true), "updated_at": .int(7)])
            user.customData = UserClaims(["groups": .array([.string("staff"), .string(text)])])
            user.otherIdentities = [Identity(provider: "oidc", kind: "oidc", subject: text)]
            for seat in [nil, "seat\(text)"] {
                let result = UserResult(generation: Int64(index) * 7, seat: seat, user: user)
                for id in Self.ids {
                    self.expectSame(
                        WireWriter.responseLine(id: id) { result.write(to: &$0) },
                        LineCodec.encodeResult(id: id, result),
                        "a user's answer with \(text.debugDescription), id \(String(describing: id))"
                    )
                }
            }
        }
    }

    @Test func helloMatchesLineCodec() {
        for (index, text) in Self.awkwardStrings.enumerated() {
            let programs: [ProgramInfo?] = [
                nil,
                ProgramInfo(identified: false, executable: nil),
                ProgramInfo(
                    identified: index.isMultiple(of: 2),
                    executable: "/usr/bin/\(text)",
                    executableSHA256: index.isMultiple(of: 3) ? "ab\(text)" : nil,
                    unit: index.isMultiple(of: 4) ? nil : "\(text).service",
                    userUnit: index.isMultiple(of: 5) ? "app-\(text).scope" : nil
                ),
            ]
            for program in programs {
                let result = HelloRequest.Result(
                    protocol: Int64(index),
                    server: "usherd",
                    version: "1.\(text)",
                    peer: PeerInfo(uid: Int64(index), gid: Int64(UInt32.max), pid: Int64(Int32.max) - Int64(index)),
                    permissions: index.isMultiple(of: 2) ? [] : ["admin", "manage", text],
                    program: program
                )
                for id in Self.ids {
                    self.expectSame(
                        WireWriter.responseLine(id: id) { result.write(to: &$0) },
                        LineCodec.encodeResult(id: id, result),
                        "hello with \(text.debugDescription), id \(String(describing: id))"
                    )
                }
            }
        }
    }

    @Test func listUsersMatchesLineCodec() {
        let users = Self.awkwardStrings.enumerated().map { Self.user($1, $0) }
        for result in [
            ListUsersRequest.Result(generation: 7, users: users),
            ListUsersRequest.Result(generation: 0, users: []),
            ListUsersRequest.Result(generation: 9, users: Array(users.prefix(3)), next: "a123"),
        ] {
            var writer = WireWriter()
            result.write(to: &writer)
            self.expectSame(
                WireWriter.responseLine(id: .int(3), resultJSON: writer.bytes),
                LineCodec.encodeResult(id: .int(3), result),
                "list_users of \(result.users.count), next \(result.next ?? "none")"
            )
        }
    }

    /// A long list written in pieces is, piece after piece, exactly the line LineCodec writes.
    @Test func listInPiecesIsTheSameLine() {
        let users = (0..<1000).map { Self.user(Self.awkwardStrings[$0 % Self.awkwardStrings.count], $0) }
        for result in [
            ListUsersRequest.Result(generation: 12, users: users),
            ListUsersRequest.Result(generation: 0, users: []),
            ListUsersRequest.Result(generation: 3, users: Array(users.prefix(7)), next: "a7"),
        ] {
            for id in Self.ids {
                for perChunk in [1, 7, 256, 5000] {
                    var chunks = ListLineChunks(id: id, result: result, usersPerChunk: perChunk)
                    var line: [UInt8] = []
                    var pieces = 0
                    while let chunk = chunks.next() {
                        line += chunk
                        pieces += 1
                    }
                    self.expectSame(
                        line,
                        LineCodec.encodeResult(id: id, result),
                        "\(result.users.count) users, \(perChunk) a piece, id \(String(describing: id))"
                    )
                    #expect(pieces >= 1)
                }
            }
        }
    }

    @Test func accessTokenMatchesLineCodec() {
        for (index, text) in Self.awkwardStrings.enumerated() {
            let result = AccessTokenRequest.Result(
                userID: "u_\(text)",
                accessToken: "eyJ.\(text).sig",
                tokenType: "Bearer",
                expiresAt: Timestamp(millisecondsSinceEpoch: 1_790_000_000_000 + Int64(index)),
                expiresIn: Int64(index) * 60 - 1
            )
            var writer = WireWriter()
            result.write(to: &writer)
            for id in Self.ids {
                self.expectSame(
                    WireWriter.responseLine(id: id, resultJSON: writer.bytes),
                    LineCodec.encodeResult(id: id, result),
                    "access_token with \(text.debugDescription)"
                )
                self.expectSame(
                    WireWriter.responseLine(id: id) { result.write(to: &$0) },
                    LineCodec.encodeResult(id: id, result),
                    "access_token written in place with \(text.debugDescription)"
                )
            }
        }
    }

    /// The cursor a page ends with names where the next one starts and where its pass began, and nothing else
    /// parses as one: no other spelling of the same numbers, and no added generation past the pass's.
    @Test func cursorsRoundTripAndStrangersAreRefused() {
        for (added, pass): (Int64, Int64) in [
            (1, 1), (1, 42), (42, 42), (999_999_999_999_999_999, 999_999_999_999_999_999),
        ] {
            let cursor = ListUsersRequest.Cursor(addedGeneration: added, passGeneration: pass)
            #expect(ListUsersRequest.Cursor(cursor.text) == cursor, "\(cursor.text)")
        }
        for stranger in [
            "", "a", "p", "ap", "a1", "a1p", "ap1", "a-1p2", "a+1p2", "a01p2", "a1p02", "a0p1", "a2p1", "b1p2", "1p2",
            "a1.5p2", "a1p2.0", "a1p2p3", "a1 p2", " a1p2", "a1p2 ", "A1p2", "a1P2", "a٣p٣", "a1p9999999999999999999",
            "a99999999999999999999p99999999999999999999",
        ] {
            #expect(ListUsersRequest.Cursor(stranger) == nil, "\(stranger.debugDescription)")
        }
    }
}
