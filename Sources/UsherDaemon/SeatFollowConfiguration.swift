import UsherCore

/// `[seats] follow`, `lock_after_pin_failures` and `[seats.follow_map]`: whom each seat's active user follows, and
/// how many wrong PINs log its user out.
extension DaemonConfiguration {
    static func readFollow(
        _ section: inout ConfigSection,
        into seats: inout SeatConfiguration
    )
        throws(ConfigurationError)
    {
        if let follow = try section.string("follow") {
            guard let parsed = SeatConfiguration.Follow(rawValue: follow) else {
                throw section.error("follow", "must be \"logind\" or \"none\"")
            }
            guard parsed == .none || seats.source == .logind else {
                throw section.error(
                    "follow",
                    "\"logind\" needs source = \"logind\" in [seats]: only logind's seats can follow its sessions"
                )
            }
            seats.follow = parsed
        }
        seats.lockAfterPINFailures = try section.int("lock_after_pin_failures", in: 1...1000) ?? 10
        guard var map = try section.section("follow_map") else { return }
        for name in map.keys {
            guard Self.isValidUnixUserName(name) else {
                throw map.error(name, "is not a Unix user name (1 to 32 of a-z A-Z 0-9 _ - ., not starting with -)")
            }
            guard let email = try map.string(name), !email.isEmpty, email.utf8.count <= 320,
                email.utf8.contains(UInt8(ascii: "@"))
            else {
                throw map.error(name, "must be the email of an usher account")
            }
            seats.followMap[name] = email
        }
        try map.finish()
        guard seats.follow == .logind || seats.followMap.isEmpty else {
            throw section.error("follow_map", "is only used with follow = \"logind\"")
        }
    }

    /// User names as shadow-utils accepts them by default, and as logind reports them.
    static func isValidUnixUserName(_ name: String) -> Bool {
        (1...32).contains(name.utf8.count) && !name.hasPrefix("-")
            && name.utf8.allSatisfy { byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                    || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-")
                    || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
            }
    }
}
