import Testing
import UsherCore
import UsherProtocol

@testable import UsherProviders

/// What usherd makes of a provider's answers with DPoP: which token types it accepts, and which refusals make it sign
/// a second proof with the provider's nonce (RFC 9449 sections 8 and 9). The flows against a real server are in
/// `OIDCDPoPTests`.
@Suite("OpenID Connect DPoP answers")
struct OIDCDPoPResponseTests {
    static func response(
        _ status: Int,
        _ body: String,
        nonce: String? = nil,
        challenge: String? = nil
    ) -> OIDCHTTP.Response {
        OIDCHTTP.Response(
            status: status,
            contentType: "application/json",
            body: Array(body.utf8),
            dpopNonce: nonce,
            challenge: challenge
        )
    }

    @Test func aDPoPTokenTypeIsAcceptedOnlyAfterAProof() throws {
        let answer: [String: JSONValue] = ["access_token": "a", "token_type": "DPoP", "expires_in": 60]
        #expect(throws: OIDCFailure.invalid("the token type \"DPoP\" is not Bearer")) {
            try OIDCTokenResponse.parse(answer)
        }
        #expect(try OIDCTokenResponse.parse(answer, sentProof: true).isDPoPBound)
        #expect(
            try !OIDCTokenResponse.parse(["access_token": "a", "token_type": "Bearer"], sentProof: true).isDPoPBound
        )
        #expect(throws: OIDCFailure.invalid("the token type \"MAC\" is not Bearer or DPoP")) {
            try OIDCTokenResponse.parse(["access_token": "a", "token_type": "MAC"], sentProof: true)
        }
    }

    @Test func theBoundKeyGoesWithTheTokens() throws {
        var parsed = try OIDCTokenResponse.parse(["access_token": "a", "token_type": "dpop"], sentProof: true)
        let key = DPoPKey.generate()
        parsed.dpopKey = key
        let tokens = parsed.tokenSet(now: Timestamp(millisecondsSinceEpoch: 1_800_000_000_000))
        #expect(tokens.dpopKey == key)
        #expect(tokens.tokenType == "DPoP")
    }

    @Test func onlyANonceRefusalAsksForASecondProof() {
        let useNonce = #"{"error":"use_dpop_nonce","error_description":"nonce required"}"#
        #expect(OIDCProvider.demandedNonce(Self.response(400, useNonce, nonce: "n-1")) == "n-1")
        let resourceChallenge = #"DPoP error="use_dpop_nonce", error_description="Resource server requires nonce""#
        #expect(OIDCProvider.demandedNonce(Self.response(401, "", nonce: "n-2", challenge: resourceChallenge)) == "n-2")
        // Another error, no nonce to use, or a nonce no proof can carry: the refusal stands.
        #expect(OIDCProvider.demandedNonce(Self.response(400, #"{"error":"invalid_grant"}"#, nonce: "n-1")) == nil)
        #expect(OIDCProvider.demandedNonce(Self.response(400, useNonce)) == nil)
        #expect(OIDCProvider.demandedNonce(Self.response(400, useNonce, nonce: "bad nonce")) == nil)
        #expect(
            OIDCProvider.demandedNonce(Self.response(400, useNonce, nonce: String(repeating: "n", count: 1025))) == nil
        )
        #expect(
            OIDCProvider.demandedNonce(Self.response(401, "", nonce: "n-2", challenge: "DPoP error=\"invalid_token\""))
                == nil
        )
        #expect(OIDCProvider.demandedNonce(Self.response(200, "{}", nonce: "n-3")) == nil)
    }
}
