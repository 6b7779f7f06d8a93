/// What usherd used Foundation's `CharacterSet` for, without it: `CharacterSet` and `trimmingCharacters(in:)` are
/// Foundation proper, not FoundationEssentials, and usherd links no Foundation (issue 25).
extension StringProtocol {
    /// Without leading and trailing white space (Unicode's White_Space: spaces, tabs and line ends), as
    /// `trimmingCharacters(in: .whitespacesAndNewlines)` did.
    package func trimmingWhitespaceAndNewlines() -> String {
        self.trimming { $0.properties.isWhitespace }
    }

    /// Without leading and trailing spaces and tabs (Unicode's space separators and U+0009), but line ends kept, as
    /// `trimmingCharacters(in: .whitespaces)` did.
    package func trimmingWhitespace() -> String {
        self.trimming { $0.properties.generalCategory == .spaceSeparator || $0 == "\t" }
    }

    /// Without leading and trailing scalars for which `trimmed` holds.
    package func trimming(while trimmed: (Unicode.Scalar) -> Bool) -> String {
        let scalars = String(self).unicodeScalars
        guard let first = scalars.firstIndex(where: { !trimmed($0) }),
            let last = scalars.lastIndex(where: { !trimmed($0) })
        else { return "" }
        return String(Substring(scalars[first...last]))
    }
}
