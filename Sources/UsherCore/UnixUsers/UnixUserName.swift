/// Unix user names for usher's users: valid by systemd's strict rules (`valid_user_group_name()` without
/// `VALID_USER_RELAX`, which every NSS and userdb client accepts) and by Debian's `adduser` default (`NAME_REGEX`):
/// a lowercase ASCII letter or `_`, then lowercase letters, digits, `_` and `-`, at most 31 bytes (`UT_NAMESIZE` - 1,
/// what `utmp` keeps).
package enum UnixUserName {
    package static let maximumLength = 31

    /// Names never given out, whatever `/etc/passwd` says: the ones systemd and Debian reserve or synthesize.
    package static let reserved: Set<String> = ["root", "nobody", "nogroup", "nfsnobody", "daemon", "bin", "sys"]

    /// Whether `name` is a valid Unix user name by the rules above.
    package static func isValid(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard let first = bytes.first, bytes.count <= Self.maximumLength else { return false }
        guard Self.isLowercaseLetter(first) || first == UInt8(ascii: "_") else { return false }
        return bytes.allSatisfy { Self.isNameByte($0) }
    }

    /// The name a user would like: the provider's `preferred_username` when it gives one (its part before an `@`),
    /// else the email's local part, else `user`; folded to the rules above (lowercase, each run of other characters
    /// one `_`, `u` in front of a leading digit or `-`). Never empty, never longer than `maximumLength`.
    package static func base(preferredUsername: String?, email: String?) -> String {
        let source = [preferredUsername, email].lazy.compactMap { text -> Substring? in
            guard let text else { return nil }
            let local = text.split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            return local.isEmpty ? nil : local
        }.first
        var folded: [UInt8] = []
        for byte in (source ?? "user").utf8 {
            let lower = (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z")) ? byte + 32 : byte
            if Self.isNameByte(lower) {
                folded.append(lower)
            } else if folded.last != UInt8(ascii: "_") {
                folded.append(UInt8(ascii: "_"))
            }
        }
        while folded.count > 1, folded.last == UInt8(ascii: "_") || folded.last == UInt8(ascii: "-") {
            folded.removeLast()
        }
        if let first = folded.first, !Self.isLowercaseLetter(first), first != UInt8(ascii: "_") {
            folded.insert(UInt8(ascii: "u"), at: 0)
        }
        if folded.isEmpty || folded == [UInt8(ascii: "_")] { folded = Array("user".utf8) }
        return String(decoding: folded.prefix(Self.maximumLength), as: UTF8.self)
    }

    /// The `attempt`th name to try for `base`: `base` itself first, then `base2`, `base3`, ..., the base shortened so
    /// that base and number fit in `maximumLength`.
    package static func candidate(_ base: String, attempt: Int) -> String {
        guard attempt > 1 else { return base }
        let suffix = String(attempt)
        return String(decoding: base.utf8.prefix(Self.maximumLength - suffix.utf8.count), as: UTF8.self) + suffix
    }

    private static func isLowercaseLetter(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        Self.isLowercaseLetter(byte) || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
            || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
    }
}
