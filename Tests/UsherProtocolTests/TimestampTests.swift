import Foundation
import Testing
import UsherProtocol

/// `Timestamp`: RFC 3339 in UTC with milliseconds on the way out; RFC 3339 with any offset and precision on the way in.
@Suite("Timestamp")
struct TimestampTests {
    // MARK: - formatting

    @Test(
        arguments: [
            (0, "1970-01-01T00:00:00.000Z"),
            (1, "1970-01-01T00:00:00.001Z"),
            (10, "1970-01-01T00:00:00.010Z"),
            (999, "1970-01-01T00:00:00.999Z"),
            (1000, "1970-01-01T00:00:01.000Z"),
            (3_723_004, "1970-01-01T01:02:03.004Z"),
            (-1, "1969-12-31T23:59:59.999Z"),
            (-999, "1969-12-31T23:59:59.001Z"),
            (-1000, "1969-12-31T23:59:59.000Z"),
            (-1001, "1969-12-31T23:59:58.999Z"),
            (-86_400_000, "1969-12-31T00:00:00.000Z"),
            (-14_182_940_000, "1969-07-20T20:17:40.000Z"),
            (-2_208_988_800_000, "1900-01-01T00:00:00.000Z"),
            (-11_670_912_000_000, "1600-03-01T00:00:00.000Z"),
            (-30_610_224_001_000, "0999-12-31T23:59:59.000Z"),
            (-62_135_596_800_000, "0001-01-01T00:00:00.000Z"),
            (951_782_400_000, "2000-02-29T00:00:00.000Z"),
            (1_709_210_096_789, "2024-02-29T12:34:56.789Z"),
            (1_709_251_199_999, "2024-02-29T23:59:59.999Z"),
            (1_709_251_200_000, "2024-03-01T00:00:00.000Z"),
            (4_107_542_399_000, "2100-02-28T23:59:59.000Z"),
            (4_107_542_400_000, "2100-03-01T00:00:00.000Z"),
            (1_800_000_000_000, "2027-01-15T08:00:00.000Z"),
            (253_402_300_799_999, "9999-12-31T23:59:59.999Z"),
        ] as [(Int64, String)]
    )
    func formatting(milliseconds: Int64, expected: String) {
        let timestamp = Timestamp(millisecondsSinceEpoch: milliseconds)
        #expect(timestamp.rfc3339 == expected)
        #expect(timestamp.description == expected)
        #expect(Timestamp(rfc3339: expected) == timestamp)
    }

    @Test func codableIsTheRFC3339String() throws {
        let timestamp = Timestamp(millisecondsSinceEpoch: 1_709_210_096_789)
        #expect(text(try JSONEncoder().encode([timestamp])) == #"["2024-02-29T12:34:56.789Z"]"#)
        #expect(
            try JSONDecoder().decode([Timestamp].self, from: Data(#"["2024-02-29T14:34:56.789+02:00"]"#.utf8)) == [
                timestamp
            ]
        )
        for bad in [#"["yesterday"]"#, #"[1709210096789]"#, #"[null]"#, #"["2024-02-29"]"#] {
            #expect(throws: DecodingError.self) { try JSONDecoder().decode([Timestamp].self, from: Data(bad.utf8)) }
        }
    }

    @Test func extremesDoNotTrap() {
        // Far outside what RFC 3339 can express, but formatting (used in descriptions and logs) must never crash.
        for milliseconds: Int64 in [.min, .min + 1, .min + 999, .min + 1000, .max, .max - 999] {
            let timestamp = Timestamp(millisecondsSinceEpoch: milliseconds)
            #expect(timestamp.rfc3339.hasSuffix("Z"))
            #expect(Timestamp(rfc3339: timestamp.rfc3339) == nil)
        }
        #expect(Timestamp(millisecondsSinceEpoch: .min).secondsSinceEpoch == -9_223_372_036_854_776)
        #expect(Timestamp(millisecondsSinceEpoch: .max).secondsSinceEpoch == 9_223_372_036_854_775)
    }

    @Test(
        arguments: [
            (0, 0), (999, 0), (1000, 1), (1999, 1), (-1, -1), (-999, -1), (-1000, -1), (-1001, -2), (-2000, -2),
            (1_709_210_096_789, 1_709_210_096),
        ] as [(Int64, Int64)]
    )
    func secondsSinceEpochRoundsDown(milliseconds: Int64, seconds: Int64) {
        #expect(Timestamp(millisecondsSinceEpoch: milliseconds).secondsSinceEpoch == seconds)
    }

    @Test func orderingAndArithmetic() {
        let a = Timestamp(millisecondsSinceEpoch: -5)
        let b = Timestamp(millisecondsSinceEpoch: 5)
        #expect(a < b)
        #expect(a.adding(milliseconds: 10) == b)
        #expect(b.adding(milliseconds: -10) == a)
        #expect([b, a].sorted() == [a, b])
    }

    // MARK: - parsing

    @Test(arguments: [
        "2024-02-29T12:34:56Z",
        "2024-02-29T12:34:56z",
        "2024-02-29t12:34:56Z",
        "2024-02-29 12:34:56Z",
        "2024-02-29T12:34:56+00:00",
        "2024-02-29T12:34:56-00:00",
        "2024-02-29T14:34:56+02:00",
        "2024-02-29T07:04:56-05:30",
        "2024-03-01T01:34:56+13:00",
        "2024-02-28T23:34:56-13:00",
        "2024-02-29T12:34:56.0Z",
        "2024-02-29T12:34:56.000000000Z",
        "2024-02-29T14:34:56.000+02:00",
    ])
    func parsesTheSameInstant(text: String) {
        #expect(Timestamp(rfc3339: text) == Timestamp(millisecondsSinceEpoch: 1_709_210_096_000))
    }

    @Test(
        arguments: [
            ("2024-02-29T12:34:56.7Z", 700),
            ("2024-02-29T12:34:56.78Z", 780),
            ("2024-02-29T12:34:56.789Z", 789),
            ("2024-02-29T12:34:56.7891Z", 789),
            ("2024-02-29T12:34:56.78912Z", 789),
            ("2024-02-29T12:34:56.789123Z", 789),
            ("2024-02-29T12:34:56.7891234Z", 789),
            ("2024-02-29T12:34:56.78912345Z", 789),
            ("2024-02-29T12:34:56.789123456Z", 789),
            ("2024-02-29T12:34:56.999999999Z", 999),
            ("2024-02-29T12:34:56.0009Z", 0),
            ("2024-02-29T12:34:56.001Z", 1),
            ("2024-02-29T12:34:56.05Z", 50),
            ("2024-02-29T12:34:56.789+02:00", 789 - 7_200_000),
            ("2024-02-29T12:34:56.5-05:30", 500 + 19_800_000),
        ] as [(String, Int64)]
    )
    func fractionalSecondsAreTruncatedToMilliseconds(text: String, milliseconds: Int64) {
        #expect(Timestamp(rfc3339: text)?.millisecondsSinceEpoch == 1_709_210_096_000 + milliseconds)
    }

    @Test func beforeTheEpoch() {
        #expect(Timestamp(rfc3339: "1969-12-31T23:59:59.999Z")?.millisecondsSinceEpoch == -1)
        #expect(Timestamp(rfc3339: "1970-01-01T01:00:00+01:00")?.millisecondsSinceEpoch == 0)
        #expect(Timestamp(rfc3339: "1970-01-01T00:00:00.5-00:01")?.millisecondsSinceEpoch == 60_500)
        #expect(Timestamp(rfc3339: "0000-03-01T00:00:00Z")?.rfc3339 == "0000-03-01T00:00:00.000Z")
    }

    @Test(arguments: [
        "",
        "Z",
        "2024",
        "2024-02",
        "2024-02-29",
        "2024-02-29T",
        "2024-02-29T12",
        "2024-02-29T12:34",
        "2024-02-29T12:34Z",
        "2024-02-29T12:34:56",
        "2024-02-29T12:34:56.",
        "2024-02-29T12:34:56.Z",
        "2024-02-29T12:34:56.123",
        "2024-02-29T12:34:56+02",
        "2024-02-29T12:34:56+0200",
        "2024-02-29T12:34:56+2:00",
        "2024-02-29T12:34:56 +02:00",
        "2024-02-29T12:34:56ZZ",
        "2024-02-29T12:34:56Z ",
        "2024-02-29T12:34:56Z\n",
        "2024-02-29T12:34:56Zjunk",
        "2024-02-29T12:34:56+02:00x",
        "2024-02-29T12:34:56.123Z0",
        " 2024-02-29T12:34:56Z",
        "2024-13-01T00:00:00Z",
        "2024-00-01T00:00:00Z",
        "2024-01-00T00:00:00Z",
        "2024-01-32T00:00:00Z",
        "2024-01-01T24:00:00Z",
        "2024-01-01T00:60:00Z",
        "2024-01-01T00:00:61Z",
        "24-02-29T12:34:56Z",
        "20240-02-29T12:34:56Z",
        "+2024-02-29T12:34:56Z",
        "-2024-02-29T12:34:56Z",
        "2024/02/29T12:34:56Z",
        "2024-02-29X12:34:56Z",
        "2024-02-29T12.34.56Z",
        "2024-2-29T12:34:56Z",
        "2024-02-29T1:34:56Z",
        "2024-02-29T12:34:5Z",
        "abcd-ef-ghTij:kl:mnZ",
        "２０２４-02-29T12:34:56Z",
        "2024-02-29T12:34:56,123Z",
        "1709210096",
    ])
    func rejectsMalformed(text: String) {
        #expect(Timestamp(rfc3339: text) == nil)
    }

    // MARK: - round trips

    @Test func formatThenParseRoundTrips() {
        // A deterministic spread over the whole representable range (years 0001 to 9999), plus every millisecond
        // around the epoch and around a leap day.
        let first: Int64 = -62_135_596_800_000
        let last: Int64 = 253_402_300_799_999
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        var values: [Int64] = [first, last]
        for _ in 0..<2_000 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            values.append(first + Int64((state >> 1) % UInt64(last - first + 1)))
        }
        values += (-2_000...2_000).map { Int64($0) }
        values += (-1_000...1_000).map { 1_709_251_200_000 + Int64($0) * 997 }
        var failures: [Int64] = []
        for value in values {
            let timestamp = Timestamp(millisecondsSinceEpoch: value)
            if Timestamp(rfc3339: timestamp.rfc3339) != timestamp || timestamp.rfc3339.utf8.count != 24 {
                failures.append(value)
            }
        }
        #expect(failures.isEmpty, "\(failures.prefix(10))")
    }

    @Test func everyDayOfFourCenturiesRoundTrips() {
        // 400 years is one full cycle of the Gregorian calendar: every leap-year rule is exercised.
        let start: Int64 = -11_670_912_000_000  // 1600-03-01
        var previous = ""
        var failures: [String] = []
        for day in Int64(0)..<146_097 {
            let timestamp = Timestamp(millisecondsSinceEpoch: start + day * 86_400_000 + 43_200_123)
            let text = timestamp.rfc3339
            if Timestamp(rfc3339: text) != timestamp || text <= previous || !text.hasSuffix("T12:00:00.123Z") {
                failures.append(text)
            }
            previous = text
        }
        #expect(failures.isEmpty, "\(failures.prefix(10))")
    }

    @Test func agreesWithFoundation() {
        // An independent check of the calendar arithmetic, for whole seconds in the proleptic-safe range 1600-9999.
        let style = Date.ISO8601FormatStyle(timeZone: TimeZone(identifier: "UTC")!)
        var state: UInt64 = 42
        var failures: [String] = []
        for _ in 0..<2_000 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let seconds = -11_670_912_000 + Int64((state >> 1) % 265_073_212_800)
            let ours = String(Timestamp(millisecondsSinceEpoch: seconds * 1000).rfc3339.prefix(19)) + "Z"
            let theirs = style.format(Date(timeIntervalSince1970: TimeInterval(seconds)))
            if ours != theirs { failures.append("\(seconds): \(ours) != \(theirs)") }
        }
        #expect(failures.isEmpty, "\(failures.prefix(10))")
    }
}
