import UsherClient

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Everything the CLI writes goes through here: unbuffered, one write per line, so that `usher watch | grep ...`
/// shows each event as it happens and stdout and stderr interleave in order.
///
/// Straight `write(2)` rather than `FileHandle`: FileHandle is in Foundation, not FoundationEssentials, and linking
/// Foundation (with ICU) costs every `usher` run milliseconds of start-up before it does anything.
enum Output {
    /// Writes a line to stdout.
    static func line(_ text: String = "") {
        self.writeAll(text + "\n", to: STDOUT_FILENO)
    }

    /// Writes lines to stdout.
    static func lines(_ texts: [String]) {
        guard !texts.isEmpty else { return }
        self.writeAll(texts.joined(separator: "\n") + "\n", to: STDOUT_FILENO)
    }

    /// Writes a line to stderr.
    static func error(_ text: String) {
        self.writeAll(text + "\n", to: STDERR_FILENO)
    }

    /// Rewrites the current line of stderr (a terminal) with `text`, without moving to the next line; nil clears it.
    static func errorInPlace(_ text: String?) {
        self.writeAll("\r\u{1B}[K" + (text ?? ""), to: STDERR_FILENO)
    }

    /// Writes a JSON value as one line to stdout, keys sorted, with every control character inside its strings
    /// escaped (see `Terminal.escapedJSON`): `usher leases --json` on a terminal is as safe as `usher leases`.
    static func json(_ value: some Encodable) {
        self.writeAll(Terminal.escapedJSON(LineCodec.line(value)), to: STDOUT_FILENO)
    }

    private static func writeAll(_ text: String, to descriptor: Int32) {
        var text = text
        text.withUTF8 { self.writeAll($0, to: descriptor) }
    }

    private static func writeAll(_ bytes: [UInt8], to descriptor: Int32) {
        bytes.withUnsafeBufferPointer { self.writeAll($0, to: descriptor) }
    }

    /// Writes all of `bytes`, resuming after a partial write or an interrupted one. A failure (a closed pipe) drops
    /// the rest: there is nowhere left to report it.
    private static func writeAll(_ bytes: UnsafeBufferPointer<UInt8>, to descriptor: Int32) {
        var offset = 0
        while offset < bytes.count {
            let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { return }
            offset += written
        }
    }

    /// Pads columns to their widest cell, two spaces apart; the last column is not padded. Without a header
    /// (`--no-headers`) only the rows are printed. `colours[row][column]` paints a cell when `paint` is on; widths are
    /// measured before painting, so colour never shifts a column.
    ///
    /// Every cell is escaped here (`Terminal.escaped`), once for every table: a cell holds text from the daemon, often
    /// from another uid (a lease's `who` and `why`), and a line feed in one would forge a row. Escaping text that
    /// was escaped already changes nothing.
    static func table(
        header: [String]?,
        rows: [[String]],
        colours: [[Terminal.Colour?]] = [],
        paint: Bool = false
    ) -> [String] {
        let all = ((header.map { [$0] } ?? []) + rows).map { $0.map(Terminal.escaped) }
        let columns = all.map(\.count).max() ?? 0
        var widths = [Int](repeating: 0, count: columns)
        for row in all {
            for (index, cell) in row.enumerated() {
                widths[index] = max(widths[index], cell.count)
            }
        }
        let offset = header == nil ? 0 : 1
        return all.enumerated().map { rowIndex, row in
            var line = ""
            for (index, cell) in row.enumerated() {
                if index > 0 { line += "  " }
                let rowColours =
                    rowIndex >= offset && rowIndex - offset < colours.count ? colours[rowIndex - offset] : []
                line += Terminal.paint(cell, index < rowColours.count ? rowColours[index] : nil, enabled: paint)
                if index < row.count - 1 { line += String(repeating: " ", count: widths[index] - cell.count) }
            }
            return line
        }
    }

    /// Key and value pairs, the values aligned.
    static func fields(_ pairs: [(String, String)]) -> [String] {
        let width = pairs.map(\.0.count).max() ?? 0
        return pairs.map { key, value in key + String(repeating: " ", count: width - key.count) + "  " + value }
    }
}

/// How times and durations read in human output.
enum Format {
    /// Local wall-clock time, `2026-11-21 09:03:58`.
    static func time(_ timestamp: Timestamp) -> String {
        var seconds = time_t(timestamp.secondsSinceEpoch)
        var parts = tm()
        guard localtime_r(&seconds, &parts) != nil else { return timestamp.rfc3339 }
        let date = [
            self.zeroPadded(Int(parts.tm_year) + 1900, 4), self.zeroPadded(Int(parts.tm_mon) + 1, 2),
            self.zeroPadded(Int(parts.tm_mday), 2),
        ]
        let time = [parts.tm_hour, parts.tm_min, parts.tm_sec].map { self.zeroPadded(Int($0), 2) }
        return date.joined(separator: "-") + " " + time.joined(separator: ":")
    }

    /// `value` in at least `width` digits, as printf's `%0*d` writes it (`-05` for -5 in 3).
    static func zeroPadded(_ value: Int, _ width: Int) -> String {
        let digits = String(value.magnitude)
        let sign = value < 0 ? "-" : ""
        return sign + String(repeating: "0", count: max(0, width - sign.count - digits.count)) + digits
    }

    /// Local time of day, `09:03:58`.
    static func timeOfDay(_ timestamp: Timestamp) -> String {
        String(self.time(timestamp).suffix(8))
    }

    /// A time with how far it is from now: `2026-11-21 09:03:58 (in 59m)`.
    static func timeWithDistance(_ timestamp: Timestamp, now: Timestamp = .now()) -> String {
        let seconds = (timestamp.millisecondsSinceEpoch - now.millisecondsSinceEpoch) / 1000
        let distance = seconds >= 0 ? "in \(self.duration(seconds))" : "\(self.duration(-seconds)) ago"
        return "\(self.time(timestamp)) (\(distance))"
    }

    /// A duration in its two largest units: `3d 4h`, `1h 2m`, `5m 3s`, `42s` (a zero second unit is left out).
    static func duration(_ seconds: Int64) -> String {
        let units: [(size: Int64, name: String)] = [(86_400, "d"), (3600, "h"), (60, "m"), (1, "s")]
        let seconds = max(0, seconds)
        let first = units.firstIndex { seconds >= $0.size } ?? units.count - 1
        var text = "\(seconds / units[first].size)\(units[first].name)"
        if first + 1 < units.count {
            let next = seconds % units[first].size / units[first + 1].size
            if next > 0 { text += " \(next)\(units[first + 1].name)" }
        }
        return text
    }

    /// `joe@example.com (u_123)`, or the id alone for a user without an email. Escaped: the email came from a
    /// provider.
    static func user(_ user: UserInfo) -> String {
        Terminal.escaped(user.email.map { "\($0) (\(user.id))" } ?? user.id)
    }

    /// Who a person would say a user is: the email, else the name, else the id (an anonymous user has neither).
    /// Escaped: email and name came from a provider.
    static func who(_ user: UserInfo) -> String {
        Terminal.escaped(user.email ?? user.name ?? user.id)
    }

    /// A user's state as every command spells it: `logged in`, `logged out`.
    static func state(_ state: UserState) -> String {
        state.rawValue.replacing("_", with: " ")
    }

    /// How far a time is from now, in its largest unit: `in 59m`, `3h ago`, `now`. Short enough for a table column.
    static func relative(_ timestamp: Timestamp, now: Timestamp = .now()) -> String {
        let seconds = (timestamp.millisecondsSinceEpoch - now.millisecondsSinceEpoch) / 1000
        guard seconds != 0 else { return "now" }
        let units: [(size: Int64, name: String)] = [(86_400, "d"), (3600, "h"), (60, "m"), (1, "s")]
        let magnitude = seconds.magnitude
        let unit = units.first { magnitude >= UInt64($0.size) } ?? units[units.count - 1]
        let amount = "\(magnitude / UInt64(unit.size))\(unit.name)"
        return seconds > 0 ? "in \(amount)" : "\(amount) ago"
    }

    /// The fields that describe one user: `whoami`, `login` and `switch` print them.
    static func userFields(_ user: UserInfo) -> [String] {
        var pairs: [(String, String)] = []
        pairs.append(("user", self.who(user)))
        if user.email != nil || user.name != nil { pairs.append(("id", Terminal.escaped(user.id))) }
        if let name = user.name, user.email != nil { pairs.append(("name", Terminal.escaped(name))) }
        pairs.append(("provider", Terminal.escaped(user.provider)))
        pairs.append(("kind", Terminal.escaped(user.kind)))
        if !user.otherIdentities.isEmpty {
            let linked = user.otherIdentities.map { Terminal.escaped("\($0.kind) at \($0.provider)") }
            pairs.append(("linked", linked.joined(separator: ", ")))
        }
        pairs.append(("state", self.state(user.state)))
        pairs.append(("token", self.tokenSummary(user)))
        if let next = user.nextRefreshAt { pairs.append(("next refresh", self.timeWithDistance(next))) }
        // The profile's name and email are shown once: above, when they are the user's own.
        var shown: Set<String> = []
        if let name = user.name, user.profile["name"]?.stringValue == name { shown.insert("name") }
        if let email = user.email, user.profile["email"]?.stringValue == email { shown.insert("email") }
        pairs += self.profileFields(user, leavingOut: shown)
        return Output.fields(pairs)
    }

    /// The profile's claims, one a line (`locale  en-GB`), and the custom data as its JSON; escaped, as they come from
    /// the provider.
    static func profileFields(_ user: UserInfo, leavingOut shown: Set<String> = []) -> [(String, String)] {
        var pairs: [(String, String)] = []
        for (name, value) in user.profile.claims.sorted(by: { $0.key < $1.key }) where !shown.contains(name) {
            let text: String
            switch value {
            case .string(let string): text = string
            case .bool(let bool): text = bool ? "true" : "false"
            case .int(let int): text = String(int)
            default: text = UserClaims([name: value]).json
            }
            pairs.append((Terminal.escaped(name.replacing("_", with: " ")), Terminal.escaped(text)))
        }
        if !user.customData.isEmpty { pairs.append(("custom data", Terminal.escaped(user.customData.json))) }
        return pairs
    }

    /// `fresh, expires 2026-11-21 09:03:58 (in 59m)`, `retrying at ... after provider_unavailable`, `none`.
    static func tokenSummary(_ user: UserInfo) -> String {
        var text = user.tokenState.rawValue
        if user.tokenState == .retrying, let retryAt = user.retryAt {
            text += " at \(self.timeWithDistance(retryAt))"
            if let error = user.lastRefreshError { text += " after \(Terminal.escaped(error.rawValue))" }
        } else if user.tokenState != .none, let expiresAt = user.accessTokenExpiresAt {
            text += ", expires \(self.timeWithDistance(expiresAt))"
        }
        return text
    }
}
