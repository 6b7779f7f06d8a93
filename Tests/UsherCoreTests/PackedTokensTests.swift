import Testing
import UsherCore
import UsherProtocol
import UsherTestSupport

/// Tokens are held packed in memory; every token must come back exactly as it went in, packed or not.
@Suite("Packed tokens")
struct PackedTokensTests {
    private static let jwt =
        "eyJhbGciOiJFUzI1NiIsImtpZCI6ImxvY2FsIiwidHlwIjoiSldUIn0"
        + ".eyJzdWIiOiJ1XzEyMyIsImV4cCI6MTgwMDAwMDAwMCwiZW1haWwiOiJhQGV4YW1wbGUuY29tIn0"
        + ".MEUCIQDkZ3Vc8a2JmHkQ4zB5n1m3KpZpQ6fGx0Yt7m8x9v0ZqAIgRZ2lK0cQm3vN8pX7wY1sT4uV6bA9dE2fH5jK8lM3nO0"

    /// Texts that pack (base64url segments) and texts that must be kept verbatim, side by side.
    private static let tokens: [String] = [
        jwt,
        "r4nd0m-0paque_t0ken-from-a-provider-AAAABBBBCCCC",
        "",
        ".",
        "..a b..",
        "abcde",  // 4k+1 characters: no byte string encodes to it
        "AB",  // the last character carries bits no encoding sets (canonical is "AA")
        "AA",
        "ya29.a0AfH6SMB~x/y+z=",
        "jeton-éàü-🔑",
        "tab\tand\nnewline",
        String(repeating: "Q", count: 5000),
    ]

    @Test(arguments: Self.tokens)
    func everyTokenComesBackAsItWent(_ token: String) {
        let withRefresh = PackedTokens(accessToken: token, refreshToken: "refresh." + token)
        #expect(withRefresh.accessToken == token)
        #expect(withRefresh.refreshToken == "refresh." + token)
        let alone = PackedTokens(accessToken: token, refreshToken: nil)
        #expect(alone.accessToken == token)
        #expect(alone.refreshToken == nil)
        let refreshOnly = PackedTokens(accessToken: "", refreshToken: token)
        #expect(refreshOnly.refreshToken == token)
    }

    @Test func distinctTokensStayDistinctAndEqualOnesEqual() {
        var seen: [PackedTokens: (String, String?)] = [:]
        for access in Self.tokens {
            for refresh in [nil] + Self.tokens.prefix(5).map(Optional.some) {
                let packed = PackedTokens(accessToken: access, refreshToken: refresh)
                #expect(packed == PackedTokens(accessToken: access, refreshToken: refresh))
                if let earlier = seen[packed] {
                    Issue.record("\(earlier) and \((access, refresh)) packed to the same bytes")
                }
                seen[packed] = (access, refresh)
            }
        }
        #expect(
            PackedTokens(accessToken: "AB", refreshToken: nil) != PackedTokens(accessToken: "AA", refreshToken: nil)
        )
    }

    @Test func aJWTAndARefreshTokenTakeAboutThreeQuartersOfTheirText() {
        let refresh = "Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6"
        let packed = PackedTokens(accessToken: Self.jwt, refreshToken: refresh)
        let text = Self.jwt.utf8.count + refresh.utf8.count
        #expect(packed.byteCount <= text * 3 / 4 + 12)
    }

    @Test func aTokenSetReadsAndReplacesItsTokens() {
        let now = Timestamp(millisecondsSinceEpoch: 1_800_000_000_000)
        var tokens = TokenSet(
            accessToken: Self.jwt,
            issuedAt: now,
            expiresAt: now.adding(seconds: 300),
            refreshToken: "refresh-1",
            refreshExpiresAt: nil
        )
        #expect(tokens.accessToken == Self.jwt)
        #expect(tokens.refreshToken == "refresh-1")
        tokens.refreshToken = nil
        #expect(tokens.accessToken == Self.jwt)
        #expect(tokens.refreshToken == nil)
        tokens.accessToken = "opaque token"
        tokens.refreshToken = "refresh-2"
        #expect(tokens.accessToken == "opaque token")
        #expect(tokens.refreshToken == "refresh-2")
        var same = tokens
        same.accessToken = "opaque token"
        #expect(same == tokens)
        same.accessToken = Self.jwt
        #expect(same != tokens)
    }
}
