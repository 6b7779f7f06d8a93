extension Unicode.Scalar {
    /// Whether this scalar is a control character that must never reach a log line, a notification to systemd or a
    /// stored claim as it is: the C0 controls (NUL, CR, LF, ESC, ...), DEL, the C1 controls (U+0080–U+009F, NEL
    /// among them), the Unicode line and paragraph separators, and the bidirectional embeddings, overrides and
    /// isolates that make a terminal show text in another order than it is stored in.
    ///
    /// Each of them can end a record early (journald splits at NUL and LF), start a forged one, drive a terminal
    /// (ESC sequences), or disguise what a line says.
    package var isControlCharacter: Bool {
        switch self.value {
        case 0x00...0x1F, 0x7F...0x9F: true
        case 0x2028, 0x2029: true
        case 0x061C, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }
}

extension StringProtocol {
    /// Whether any scalar is a control character (see `Unicode.Scalar.isControlCharacter`).
    package var containsControlCharacters: Bool {
        self.unicodeScalars.contains { $0.isControlCharacter }
    }
}
