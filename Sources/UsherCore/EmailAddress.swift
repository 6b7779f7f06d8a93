import UsherProtocol

/// How usher compares emails: canonically equivalent spellings are one email, and case does not matter.
///
/// `josé@ex.com` can arrive with a precomposed é (U+00E9, NFC: what most keyboards send) or with an e followed by a
/// combining acute accent (U+0065 U+0301, NFD: what some systems send). They look the same in every table, so two
/// accounts must never be told apart by it. Emails are stored composed (NFC) and looked up by `key(_:)`.
///
/// Normalised with the standard library's own NFC (the one `String`'s `==` compares with), not Foundation's
/// `precomposedStringWithCanonicalMapping`: that one needs Foundation and ICU, which the daemon is leaving.
package enum EmailAddress {
    /// The `email` claim, only when `email_verified` is JSON `true` (OpenID Connect Core §5.1). `"true"`, `1`, a
    /// missing claim or anything else gives nil: an address nobody proved to own must not label the user. The one
    /// rule by which a login and `refresh_profile` take a provider's email as the user's.
    package static func verified(email: JSONValue?, emailVerified: JSONValue?) -> String? {
        guard case .bool(true)? = emailVerified else { return nil }
        return email?.stringValue
    }

    /// `email` in Normalization Form C, with its case as typed: what is stored and shown.
    package static func composed(_ email: some StringProtocol) -> String {
        let text = String(email)
        // ASCII is its own NFC; most emails are ASCII.
        guard !text.utf8.allSatisfy({ $0 < 0x80 }) else { return text }
        // `_nfcCodeUnits` is the standard library's NFC (the underscore marks it as not yet a stable API; the
        // `EmailAddressTests` pin what it must do, so a change in a later toolchain is caught).
        return String(decoding: text._nfcCodeUnits, as: UTF8.self)
    }

    /// The key accounts are found by: NFC, then lower case (as the key always was), then NFC again, since lowering
    /// the case can leave a sequence that composes (`İ` lowers to `i` and a combining dot).
    package static func key(_ email: some StringProtocol) -> String {
        self.composed(self.composed(email).lowercased())
    }
}
