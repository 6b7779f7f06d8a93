import Crypto
import Foundation
import Testing
import UsherCore
import UsherProtocol
import UsherStore
import UsherTestSupport

/// Access tokens are ES256 JWTs that anyone can verify with the daemon's JWK set.
@Suite(.integrationHangGuard)
struct AccessTokenJWTTests {
    @Test func accessTokensAreES256JWTsVerifiableWithJWKS() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            _ = try await client.result("register", ["email": "joe@example.com", "password": "secret123"])
            let user = try #require(
                try await client.result("login", SessionRulesTests.emailLogin("joe@example.com"))["user"]?["id"]?
                    .stringValue
            )
            let token = try await client.result("access_token")
            #expect(token["token_type"] == "Bearer")
            #expect(token["user_id"]?.stringValue == user)
            let expiresIn = try #require(token["expires_in"]?.intValue)
            #expect((1700...1800).contains(expiresIn))
            let jwt = try #require(token["access_token"]?.stringValue)
            let parts = jwt.split(separator: ".").map(String.init)
            #expect(parts.count == 3)

            let key = try #require(try await client.result("jwks")["keys"]?.arrayValue?.first)
            #expect(key["kty"] == "EC")
            #expect(key["crv"] == "P-256")
            #expect(key["alg"] == "ES256")
            func base64URL(_ text: String) -> Data? {
                var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
                while base64.count % 4 != 0 { base64 += "=" }
                return Data(base64Encoded: base64)
            }
            let x = try #require(key["x"]?.stringValue.flatMap(base64URL))
            let y = try #require(key["y"]?.stringValue.flatMap(base64URL))
            let publicKey = try P256.Signing.PublicKey(rawRepresentation: x + y)
            let signature = try P256.Signing.ECDSASignature(rawRepresentation: try #require(base64URL(parts[2])))
            #expect(publicKey.isValidSignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8)))

            let header = try JSONDecoder().decode(JSONValue.self, from: try #require(base64URL(parts[0])))
            #expect(header["alg"] == "ES256")
            #expect(header["kid"] == key["kid"])
            let claims = try JSONDecoder().decode(JSONValue.self, from: try #require(base64URL(parts[1])))
            #expect(claims["sub"]?.stringValue == user)
            #expect(claims["email"] == "joe@example.com")
            #expect(claims["iss"] == "usherd:local")
            #expect(claims["jti"]?.stringValue?.isEmpty == false)
            let iat = try #require(claims["iat"]?.intValue)
            let exp = try #require(claims["exp"]?.intValue)
            #expect(exp - iat == 1800)
        }
    }
}
