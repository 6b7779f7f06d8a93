import Testing
import UsherProtocol

/// `dpop_proof`'s parameters: an HTTP method, an absolute http(s) URL whose query and fragment are left out of the
/// proof, and a nonce as servers send them; anything else is `invalid_params` before the daemon signs anything.
@Suite("dpop_proof params")
struct DPoPProofParamsTests {
    @Test func readsBackAndLeavesTheQueryAndFragmentOut() throws {
        let request = DPoPProofRequest(htm: "POST", htu: "https://api.example.com/a", nonce: "n-1", userID: "u_01")
        #expect(try DPoPProofRequest(params: request.params).params == request.params)
        let decoded = try DPoPProofRequest(
            params: Params(["htm": "GET", "htu": "https://api.example.com:8443/v1/items?page=2#top"])
        )
        #expect(decoded.htu == "https://api.example.com:8443/v1/items")
        #expect(decoded.htm == "GET")
        #expect(decoded.nonce == nil && decoded.userID == nil)
        #expect(try DPoPProofRequest(params: Params(["htm": "GET", "htu": "HTTP://h/#f"])).htu == "HTTP://h/")
    }

    @Test(arguments: [
        ["htu": "https://a.example/"] as [String: JSONValue],
        ["htm": "GET"],
        ["htm": "", "htu": "https://a.example/"],
        ["htm": "GE T", "htu": "https://a.example/"],
        ["htm": .string(String(repeating: "G", count: 33)), "htu": "https://a.example/"],
        ["htm": 7, "htu": "https://a.example/"],
        ["htm": "GET", "htu": "ftp://a.example/"],
        ["htm": "GET", "htu": "/relative"],
        ["htm": "GET", "htu": "https://"],
        ["htm": "GET", "htu": "https:///path"],
        ["htm": "GET", "htu": "https://a.example/\u{7F}"],
        ["htm": "GET", "htu": "https://a.example/a\nb"],
        ["htm": "GET", "htu": .string("https://a.example/" + String(repeating: "a", count: 4096))],
        ["htm": "GET", "htu": "https://a.example/", "nonce": ""],
        ["htm": "GET", "htu": "https://a.example/", "nonce": "a b"],
        ["htm": "GET", "htu": "https://a.example/", "nonce": "back\\slash"],
        ["htm": "GET", "htu": "https://a.example/", "nonce": .string(String(repeating: "n", count: 1025))],
    ])
    func badParamsAreInvalid(params: [String: JSONValue]) {
        #expect(throws: ResponseError.self) { try DPoPProofRequest(params: Params(params)) }
    }

    @Test func theErrorsSayWhatIsExpected() {
        #expect(throws: ResponseError(.invalidParams, "params.htm must be an HTTP method, such as GET or POST")) {
            try DPoPProofRequest(params: Params(["htm": "G T", "htu": "https://a.example/"]))
        }
        #expect(
            throws: ResponseError(
                .invalidParams,
                "params.htu must be the request's absolute http or https URL (at most 4096 bytes)"
            )
        ) { try DPoPProofRequest(params: Params(["htm": "GET", "htu": "file:///etc/passwd"])) }
    }
}
