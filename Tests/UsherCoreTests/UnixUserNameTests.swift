import Testing
import UsherCore

/// Unix user names from emails and `preferred_username`: valid by systemd's strict rules, whatever they are made from.
struct UnixUserNameTests {
    @Test(
        arguments: [
            (nil, "alice@example.com", "alice"),
            (nil, "Alice.Smith@example.com", "alice_smith"),
            (nil, "a+b..c@example.com", "a_b_c"),
            ("Bob", "alice@example.com", "bob"),
            ("bob@corp.example", nil, "bob"),
            (nil, "42@example.com", "u42"),
            (nil, "-x-@example.com", "u-x"),
            (nil, "émile@example.com", "_mile"),
            (nil, "__@example.com", "user"),
            (nil, nil, "user"),
            ("", "@example.com", "user"),
            (nil, String(repeating: "x", count: 40) + "@example.com", String(repeating: "x", count: 31)),
        ] as [(String?, String?, String)]
    )
    func namesAreValid(preferred: String?, email: String?, expected: String) {
        let name = UnixUserName.base(preferredUsername: preferred, email: email)
        #expect(name == expected)
        #expect(UnixUserName.isValid(name), "\(name)")
    }

    @Test func candidatesStayWithinTheLimit() {
        #expect(UnixUserName.candidate("alice", attempt: 1) == "alice")
        #expect(UnixUserName.candidate("alice", attempt: 2) == "alice2")
        let long = String(repeating: "y", count: 31)
        #expect(UnixUserName.candidate(long, attempt: 12) == String(repeating: "y", count: 29) + "12")
        #expect(!UnixUserName.isValid("Alice") && !UnixUserName.isValid("1a") && !UnixUserName.isValid("a.b"))
        #expect(!UnixUserName.isValid("") && !UnixUserName.isValid(String(repeating: "a", count: 32)))
    }
}
