#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A point in time with millisecond precision, written on the wire as RFC 3339 UTC (`2026-11-21T08:03:58.123Z`).
///
/// usher stores and compares times as whole milliseconds so that what a client reads back is exactly what the daemon
/// holds; no sub-millisecond part is ever lost in a round trip.
public struct Timestamp: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// Milliseconds since 1970-01-01T00:00:00Z.
    public var millisecondsSinceEpoch: Int64

    public init(millisecondsSinceEpoch: Int64) {
        self.millisecondsSinceEpoch = millisecondsSinceEpoch
    }

    /// The current wall-clock time.
    public static func now() -> Timestamp {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Timestamp(millisecondsSinceEpoch: Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000)
    }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool {
        lhs.millisecondsSinceEpoch < rhs.millisecondsSinceEpoch
    }

    public func adding(milliseconds: Int64) -> Timestamp {
        Timestamp(millisecondsSinceEpoch: self.millisecondsSinceEpoch &+ milliseconds)
    }

    /// Whole seconds since the epoch, rounded down (the `iat`/`exp` unit of JWTs).
    public var secondsSinceEpoch: Int64 {
        // Floor division without an intermediate that overflows near `Int64.min`.
        self.millisecondsSinceEpoch / 1000 - (self.millisecondsSinceEpoch % 1000 < 0 ? 1 : 0)
    }

    public var description: String { self.rfc3339 }

    /// `YYYY-MM-DDTHH:MM:SS.mmmZ`.
    public var rfc3339: String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        self.appendRFC3339(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends `rfc3339` as UTF-8, without building a string (the hot reads write many of these: a page of
    /// `list_users` writes several per user). The 24 bytes are put together on the stack, with divisions by constants
    /// only, and appended at once.
    public func appendRFC3339(to bytes: inout [UInt8]) {
        let millis = Int(((self.millisecondsSinceEpoch % 1000) + 1000) % 1000)
        let seconds = self.secondsSinceEpoch
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = Int(seconds - days * 86_400)
        let (year, month, day) = Self.civil(fromDays: days)
        guard (0...9999).contains(year) else {
            // Far from now: as many digits as it takes, and a sign before the common era.
            let text = String(year)
            bytes.append(contentsOf: (String(repeating: "0", count: max(0, 4 - text.count)) + text).utf8)
            Self.appendTail(to: &bytes, month: Int(month), day: Int(day), secondOfDay: secondOfDay, millis: millis)
            return
        }
        let digits = Int(year)
        bytes.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: digits / 1000))
        bytes.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: digits / 100 % 10))
        bytes.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: digits / 10 % 10))
        bytes.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: digits % 10))
        Self.appendTail(to: &bytes, month: Int(month), day: Int(day), secondOfDay: secondOfDay, millis: millis)
    }

    /// `-MM-DDTHH:MM:SS.mmmZ`.
    private static func appendTail(to bytes: inout [UInt8], month: Int, day: Int, secondOfDay: Int, millis: Int) {
        let zero = UInt8(ascii: "0")
        func two(_ value: Int) -> (UInt8, UInt8) {
            (zero &+ UInt8(truncatingIfNeeded: value / 10), zero &+ UInt8(truncatingIfNeeded: value % 10))
        }
        let (month1, month2) = two(month)
        let (day1, day2) = two(day)
        let (hour1, hour2) = two(secondOfDay / 3600)
        let (minute1, minute2) = two(secondOfDay % 3600 / 60)
        let (second1, second2) = two(secondOfDay % 60)
        let tail:
            (
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8
            ) = (
                UInt8(ascii: "-"), month1, month2, UInt8(ascii: "-"), day1, day2, UInt8(ascii: "T"), hour1, hour2,
                UInt8(ascii: ":"), minute1, minute2, UInt8(ascii: ":"), second1, second2, UInt8(ascii: "."),
                zero &+ UInt8(truncatingIfNeeded: millis / 100), zero &+ UInt8(truncatingIfNeeded: millis / 10 % 10),
                zero &+ UInt8(truncatingIfNeeded: millis % 10), UInt8(ascii: "Z")
            )
        withUnsafeBytes(of: tail) { bytes.append(contentsOf: $0) }
    }

    /// Parses RFC 3339 (`2026-11-21T08:03:58Z`, fractional seconds and numeric offsets accepted).
    public init?(rfc3339 text: String) {
        let bytes = Array(text.utf8)
        var index = 0
        func number(_ width: Int) -> Int64? {
            guard index + width <= bytes.count else { return nil }
            var value: Int64 = 0
            for byte in bytes[index..<index + width] {
                guard byte >= 48, byte <= 57 else { return nil }
                value = value * 10 + Int64(byte - 48)
            }
            index += width
            return value
        }
        func expect(_ characters: String) -> Bool {
            guard index < bytes.count, characters.utf8.contains(bytes[index]) else { return false }
            index += 1
            return true
        }
        guard let year = number(4), expect("-"), let month = number(2), expect("-"), let day = number(2),
            expect("Tt "), let hour = number(2), expect(":"), let minute = number(2), expect(":"),
            let second = number(2), (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60,
            second < 61
        else { return nil }
        var millis: Int64 = 0
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            var scale: Int64 = 100
            var digits = 0
            while index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 {
                millis += Int64(bytes[index] - 48) * scale
                scale /= 10
                index += 1
                digits += 1
            }
            guard digits > 0 else { return nil }
        }
        var offset: Int64 = 0
        if expect("Zz") {
            offset = 0
        } else if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
            let sign: Int64 = bytes[index] == UInt8(ascii: "+") ? 1 : -1
            index += 1
            guard let offsetHours = number(2), expect(":"), let offsetMinutes = number(2) else { return nil }
            offset = sign * (offsetHours * 3600 + offsetMinutes * 60)
        } else {
            return nil
        }
        guard index == bytes.count else { return nil }
        let days = Self.days(fromCivil: year, month, day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset
        self.millisecondsSinceEpoch = seconds * 1000 + millis
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let value = Timestamp(rfc3339: text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an RFC 3339 time: \(text)")
        }
        self = value
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(self.rfc3339)
    }

    // Howard Hinnant's days_from_civil / civil_from_days.
    private static func days(fromCivil year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
