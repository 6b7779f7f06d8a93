import Logging
import Testing
import UsherCore

@testable import UsherDaemon

/// One record is one line, whatever a request puts in its fields.
@Suite(.timeLimit(.minutes(1)))
struct LogEscapingTests {
    /// Every kind of control character a field could smuggle in: NUL, CR, LF, ESC, a C1 control (NEL), DEL, a line
    /// separator and a right-to-left override.
    static let hostile = "a\u{0}b\rc\nd\u{1B}[31me\u{85}f\u{7F}g\u{2028}h\u{202E}i\\j"
    static let escaped = #"a\u0000b\rc\nd\u001b[31me\u0085f\u007fg\u2028h\u202ei\\j"#

    @Test(arguments: ["<6>", "2027-01-15T08:00:00.000Z info     "])
    func controlCharactersInTheMessageAndEveryValueAreEscaped(prefix: String) {
        let line = DaemonLogHandler.render(
            prefix: prefix,
            message: "audit " + Self.hostile,
            metadata: [
                "user.id": .string(Self.hostile),
                "forged": .string("x\noutcome=ok peer.uid=0"),
                "key\nwith=break": .string("v"),
                "nested": .dictionary(["k": .string("\u{0}\n")]),
            ]
        )
        #expect(line.hasPrefix(prefix + "audit " + Self.escaped + " "))
        #expect(line.hasSuffix("\n"))
        let body = line.dropLast()
        #expect(!body.unicodeScalars.contains { $0.isControlCharacter }, "\(line.debugDescription)")
        #expect(line.contains(#" user.id=\#(Self.escaped)"#))
        #expect(line.contains(#" forged="x\noutcome=ok peer.uid=0""#))
        #expect(line.contains(#" key\nwith=break=v"#))
    }

    @Test func longFieldsAreCutWithAMarker() {
        let line = DaemonLogHandler.render(
            prefix: "<5>",
            message: String(repeating: "m", count: 70_000),
            metadata: ["user.id": .string(String(repeating: "u", count: 60_000))]
        )
        #expect(line.utf8.count < 6000)
        #expect(line.contains("…[70000 bytes, cut]"))
        #expect(line.contains("…[60000 bytes, cut]"))
        // An escape is never cut in half.
        let cut = LogText.escaped(String(repeating: "\n", count: 100), limit: 11)
        #expect(cut == #"\n\n\n\n\n…[100 bytes, cut]"#)
    }

    @Test func plainTextIsLeftAlone() {
        let line = DaemonLogHandler.render(
            prefix: "<6>",
            message: "usherd 0.1.0 listening",
            metadata: ["socket": .string("/run/usher/usher.sock"), "note": .string("two words"), "empty": .string("")]
        )
        #expect(line == "<6>usherd 0.1.0 listening empty=\"\" note=\"two words\" socket=/run/usher/usher.sock\n")
        #expect(LogText.escaped("joe@example.com — Zoë", limit: 100) == "joe@example.com — Zoë")
    }

    @Test func notificationValuesCannotAddAssignments() {
        let message = Systemd.message(["READY=1", "STATUS=1 user logged in, active: m@x\nWATCHDOG=trigger\nSTOPPING=1"])
        #expect(message == #"READY=1"# + "\n" + #"STATUS=1 user logged in, active: m@x\nWATCHDOG=trigger\nSTOPPING=1"#)
        #expect(message.split(separator: "\n").count == 2)
        #expect(!Systemd.message(["STATUS=a\u{0}b"]).utf8.contains(0))
    }
}
