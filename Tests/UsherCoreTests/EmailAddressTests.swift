import Testing
import UsherCore

/// `EmailAddress`: emails in Normalization Form C, keyed in lower case. It rests on the standard library's
/// `_nfcCodeUnits` (not yet a stable API), so these pin what it must keep doing on every toolchain.
@Suite
struct EmailAddressTests {
    static func scalars(_ text: String) -> [UInt32] { text.unicodeScalars.map(\.value) }

    @Test(arguments: [
        // A combining acute accent composes with the e before it.
        ("jose\u{301}@ex.com", "jos\u{E9}@ex.com"),
        // Already composed, and plain ASCII: unchanged.
        ("jos\u{E9}@ex.com", "jos\u{E9}@ex.com"),
        ("joe@example.com", "joe@example.com"),
        // Singletons decompose to another character: the Ångström sign is the letter Å.
        ("\u{212B}ngstr\u{F6}m@ex.com", "\u{C5}ngstr\u{F6}m@ex.com"),
        // Combining marks are put in their canonical order before composing.
        ("a\u{323}\u{302}@ex.com", "\u{1EAD}@ex.com"),
        ("a\u{302}\u{323}@ex.com", "\u{1EAD}@ex.com"),
        // Hangul jamo compose into a syllable.
        ("\u{1100}\u{1161}\u{11A8}@ex.kr", "\u{AC01}@ex.kr"),
    ])
    func composedIsNFC(input: String, expected: String) {
        #expect(Self.scalars(EmailAddress.composed(input)) == Self.scalars(expected))
    }

    @Test func theCaseIsKeptInTheEmailAndFoldedInTheKey() {
        #expect(Self.scalars(EmailAddress.composed("JOSE\u{301}@Ex.com")) == Self.scalars("JOS\u{C9}@Ex.com"))
        for spelling in ["jos\u{E9}@ex.com", "jose\u{301}@ex.com", "JOS\u{C9}@EX.COM", "JOSE\u{301}@ex.com"] {
            #expect(Self.scalars(EmailAddress.key(spelling)) == Self.scalars("jos\u{E9}@ex.com"), "\(spelling)")
        }
        #expect(EmailAddress.key("ann@ex.com") != EmailAddress.key("anne@ex.com"))
    }
}
