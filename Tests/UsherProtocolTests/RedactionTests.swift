import Testing
import UsherProtocol

/// Types that carry secrets describe themselves without them, however they end up in a log line.
@Suite("Redaction")
struct RedactionTests {
    private static let secret = "s3cr3t-Value/42"

    @Test func loginRequestHidesCredentials() {
        let requests = [
            LoginRequest.emailPassword(provider: "local", email: "ada@example.com", password: Self.secret),
            LoginRequest.apiKey(key: Self.secret),
            LoginRequest(credentials: [
                "type": "device_code", "code": .string(Self.secret), "nested": [.string(Self.secret)],
            ]),
        ]
        for request in requests {
            expectNoSecret(request)
            #expect("\(request)".contains(request.credentialType))
        }
        #expect("\(requests[0])" == "login(provider: local, type: email_password)")
        #expect("\(requests[1])" == "login(provider: default, type: api_key)")
    }

    @Test func registerRequestHidesThePassword() {
        let request = RegisterRequest(provider: "local", email: "ada@example.com", password: Self.secret)
        expectNoSecret(request)
        #expect("\(request)".contains("ada@example.com"))
    }

    @Test func accessTokenResultHidesTheToken() {
        let result = AccessTokenRequest.Result(
            userID: "u_01",
            accessToken: Self.secret,
            tokenType: "Bearer",
            expiresAt: Fixtures.t0,
            expiresIn: 60
        )
        expectNoSecret(result)
        #expect("\(result)".contains("u_01"))
    }

    @Test func createAPIKeyResultHidesTheKey() {
        let result = CreateAPIKeyRequest.Result(userID: "u_01", name: "ci", key: Self.secret, createdAt: Fixtures.t0)
        expectNoSecret(result)
        #expect("\(result)".contains("ci"))
    }

    private func expectNoSecret<T>(_ value: T, sourceLocation: SourceLocation = #_sourceLocation) {
        // Plain interpolation, debug printing, and the element and wrapped forms used by collections and optionals.
        let renderings = [
            "\(value)",
            String(describing: value),
            String(reflecting: value),
            "\([value])",
            "\(["k": value])",
            "\(Optional(value) as Any)",
        ]
        for rendering in renderings {
            #expect(!rendering.contains(Self.secret), "\(rendering)", sourceLocation: sourceLocation)
        }
    }
}
