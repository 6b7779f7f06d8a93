import Testing
import UsherCore

/// The trimming usherd does without Foundation's `CharacterSet`: what a key file, a lock file or a typed account name
/// is read as.
struct TrimmingTests {
    @Test func whitespaceAndNewlinesGoFromBothEndsOnly() {
        #expect(" \t\r\n\u{3000}key\u{A0}file\u{2028}\n".trimmingWhitespaceAndNewlines() == "key\u{A0}file")
        #expect("\n \t\n".trimmingWhitespaceAndNewlines() == "")
        #expect("".trimmingWhitespaceAndNewlines() == "")
        #expect("a".trimmingWhitespaceAndNewlines() == "a")
    }

    @Test func whitespaceKeepsLineEnds() {
        #expect(" \tann@example.com\u{2003} ".trimmingWhitespace() == "ann@example.com")
        #expect("\nann\n".trimmingWhitespace() == "\nann\n")
    }

    @Test func chosenScalarsGoFromBothEnds() {
        #expect("[::1]".trimming { $0 == "[" || $0 == "]" } == "::1")
        #expect("[]".trimming { $0 == "[" || $0 == "]" } == "")
        #expect("a[b]c".trimming { $0 == "[" || $0 == "]" } == "a[b]c")
    }
}
