import Foundation
import Testing
import UsherProtocol

/// Golden JSON of every result: see `GoldenJSON.swift` for how each line is checked.
@Suite("Golden JSON: results")
struct GoldenResultTests {
    @Test func helloResult() throws {
        let result = HelloRequest.Result(
            protocol: Int64(protocolVersion),
            server: "usherd",
            version: "0.1.0",
            peer: PeerInfo(uid: 1000, gid: 1001, pid: 4242),
            permissions: ["read", "write"]
        )
        try expectResult(
            result,
            id: .int(1),
            #"{"id":1,"result":{"peer":{"gid":1001,"pid":4242,"uid":1000},"permissions":["read","write"],"#
                + #""protocol":1,"server":"usherd","version":"0.1.0"}}"# + "\n"
        )
    }

    /// usherd always reports the program it identified; the digest only when a rule asked for it, the rest as null
    /// when unknown.
    @Test func helloResultWithProgram() throws {
        let identified = HelloRequest.Result(
            protocol: Int64(protocolVersion),
            server: "usherd",
            version: "0.1.0",
            peer: PeerInfo(uid: 1000, gid: 1001, pid: 4242),
            permissions: ["token"],
            program: ProgramInfo(
                identified: true,
                executable: "/usr/bin/kiosk-app",
                executableSHA256: String(repeating: "ab", count: 32),
                unit: "user@1000.service",
                userUnit: "kiosk-app.service"
            )
        )
        try expectResult(
            identified,
            id: .int(1),
            #"{"id":1,"result":{"peer":{"gid":1001,"pid":4242,"uid":1000},"permissions":["token"],"#
                + #""program":{"executable":"/usr/bin/kiosk-app","executable_sha256":""#
                + String(repeating: "ab", count: 32)
                + #"","identified":true,"unit":"user@1000.service","user_unit":"kiosk-app.service"},"#
                + #""protocol":1,"server":"usherd","version":"0.1.0"}}"# + "\n"
        )
        let unknown = HelloRequest.Result(
            protocol: Int64(protocolVersion),
            server: "usherd",
            version: "0.1.0",
            peer: PeerInfo(uid: 1000, gid: 1001, pid: 4242),
            permissions: [],
            program: ProgramInfo(identified: false, executable: nil)
        )
        try expectResult(
            unknown,
            id: .int(2),
            #"{"id":2,"result":{"peer":{"gid":1001,"pid":4242,"uid":1000},"permissions":[],"#
                + #""program":{"executable":null,"identified":false,"unit":null,"user_unit":null},"#
                + #""protocol":1,"server":"usherd","version":"0.1.0"}}"# + "\n"
        )
    }

    @Test func providersResult() throws {
        let result = ProvidersRequest.Result(providers: [
            ProviderInfo(name: "local", type: "local", credentials: ["email_password", "api_key"], default: true),
            ProviderInfo(name: "corp/sso", type: "oidc", credentials: [], default: false),
        ])
        try expectResult(
            result,
            id: .int(2),
            #"{"id":2,"result":{"providers":[{"credentials":["email_password","api_key"],"default":true,"#
                + #""name":"local","type":"local"},{"credentials":[],"default":false,"name":"corp/sso","type":"oidc"}]}}"#
                + "\n"
        )
    }

    @Test func registerResult() throws {
        try expectResult(
            RegisterRequest.Result(provider: "local", email: "ada@example.com"),
            id: .string("r-1"),
            #"{"id":"r-1","result":{"email":"ada@example.com","provider":"local"}}"# + "\n"
        )
    }

    @Test func userResultWithEveryField() throws {
        try expectResult(
            UserResult(generation: 3, user: Fixtures.fullUser),
            id: .int(3),
            #"{"id":3,"result":{"generation":3,"user":"# + Fixtures.fullUserJSON + "}}\n"
        )
    }

    @Test func userResultWithNulls() throws {
        try expectResult(
            UserResult(generation: 4, user: Fixtures.bareUser),
            id: .int(4),
            #"{"id":4,"result":{"generation":4,"user":"# + Fixtures.bareUserJSON + "}}\n"
        )
    }

    @Test func currentUserResult() throws {
        try expectResult(
            CurrentUserRequest.Result(generation: 5, user: Fixtures.fullUser),
            id: .int(5),
            #"{"id":5,"result":{"generation":5,"locked":false,"user":"# + Fixtures.fullUserJSON + "}}\n"
        )
    }

    @Test func currentUserResultWithoutUser() throws {
        try expectResult(
            CurrentUserRequest.Result(generation: 0, user: nil),
            id: .int(6),
            #"{"id":6,"result":{"generation":0,"locked":false,"user":null}}"# + "\n"
        )
    }

    @Test func currentUserResultOfALockedSeat() throws {
        try expectResult(
            CurrentUserRequest.Result(generation: 7, seat: "seat0", user: nil, locked: true),
            id: .int(7),
            #"{"id":7,"result":{"generation":7,"locked":true,"seat":"seat0","user":null}}"# + "\n"
        )
    }

    @Test func listUsersResult() throws {
        try expectResult(
            ListUsersRequest.Result(generation: 7, users: [Fixtures.fullUser, Fixtures.bareUser]),
            id: .int(7),
            #"{"id":7,"result":{"generation":7,"users":["# + Fixtures.fullUserJSON + ","
                + Fixtures.bareUserJSON + "]}}\n"
        )
        try expectResult(
            ListUsersRequest.Result(generation: 0, users: []),
            id: .int(8),
            #"{"id":8,"result":{"generation":0,"users":[]}}"# + "\n"
        )
    }

    @Test func logoutResultOfRemovedAnonymousUser() throws {
        var user = Fixtures.bareUser
        user.state = .removed
        let userJSON = Fixtures.bareUserJSON.replacingOccurrences(
            of: #""state":"logged_out""#,
            with: #""state":"removed""#
        )
        #expect(userJSON.contains(#""state":"removed""#))
        try expectResult(
            LogoutRequest.Result(generation: 9, user: user, revoked: false),
            id: .int(9),
            #"{"id":9,"result":{"generation":9,"revoked":false,"user":"# + userJSON + "}}\n"
        )
    }

    @Test func logoutResultOfLoggedOutUser() throws {
        var user = Fixtures.fullUser
        user.state = .loggedOut
        user.active = false
        user.tokenState = .none
        user.accessTokenExpiresAt = nil
        user.refreshTokenExpiresAt = nil
        user.nextRefreshAt = nil
        user.retryAt = nil
        user.lastRefreshError = nil
        try expectResult(
            LogoutRequest.Result(generation: 10, user: user, revoked: true),
            id: .int(10),
            #"{"id":10,"result":{"generation":10,"revoked":true,"user":{"access_token_expires_at":null,"#
                + #""active":false,"created_at":"2027-01-15T08:00:00.000Z","#
                + #""custom_data":{"groups":["eng","ops"],"level":3,"note":"quote \" and \\"},"#
                + #""email":"ada@example.com","id":"u_01","#
                + #""identities":[{"kind":"email_password","provider":"local","subject":"acct-1"},"#
                + #"{"kind":"anonymous","provider":"local","subject":"anonymous:9f"}],"#
                + #""kind":"email_password","last_active_at":"2027-01-15T08:01:00.456Z","#
                + #""last_login_at":"2027-01-15T08:01:00.123Z","last_refresh_error":null,"name":"Ada Lovelace","#
                + #""next_refresh_at":null,"#
                + #""profile":{"email_verified":true,"name":"Ada Lovelace","picture":"https://example.com/a/b.png"},"#
                + #""provider":"local","refresh_token_expires_at":null,"retry_at":null,"#
                + #""state":"logged_out","token_state":"none"}}}"# + "\n"
        )
    }

    @Test func removeUserResult() throws {
        try expectResult(
            RemoveUserRequest.Result(generation: 11, userID: "u_02"),
            id: .int(11),
            #"{"id":11,"result":{"generation":11,"user_id":"u_02"}}"# + "\n"
        )
    }

    @Test func accessTokenResult() throws {
        try expectResult(
            AccessTokenRequest.Result(
                userID: "u_01",
                accessToken: "eyJhbGciOiJFUzI1NiJ9.e30.a/b+c=",
                tokenType: "Bearer",
                expiresAt: Fixtures.at(3_600_000),
                expiresIn: 3540
            ),
            id: .int(12),
            #"{"id":12,"result":{"access_token":"eyJhbGciOiJFUzI1NiJ9.e30.a/b+c=","#
                + #""expires_at":"2027-01-15T09:00:00.000Z","expires_in":3540,"token_type":"Bearer","user_id":"u_01"}}"#
                + "\n"
        )
    }

    @Test func dpopProofResult() throws {
        let result = DPoPProofRequest.Result(
            userID: "u_01",
            proof: "eyJ0eXAiOiJkcG9wK2p3dCJ9.e30.c2ln",
            accessTokenExpiresAt: Fixtures.at(3_600_000)
        )
        try expectResult(
            result,
            id: .int(14),
            #"{"id":14,"result":{"access_token_expires_at":"2027-01-15T09:00:00.000Z","#
                + #""proof":"eyJ0eXAiOiJkcG9wK2p3dCJ9.e30.c2ln","user_id":"u_01"}}"# + "\n"
        )
        #expect(!result.description.contains("eyJ"))
    }

    @Test func refreshResult() throws {
        try expectResult(
            RefreshRequest.Result(userID: "u_01", accessTokenExpiresAt: Fixtures.at(3_600_000)),
            id: .int(13),
            #"{"id":13,"result":{"access_token_expires_at":"2027-01-15T09:00:00.000Z","user_id":"u_01"}}"# + "\n"
        )
    }

    @Test func createAPIKeyResult() throws {
        try expectResult(
            CreateAPIKeyRequest.Result(userID: "u_01", name: "ci", key: "usk_0123/abcd", createdAt: Fixtures.t0),
            id: .int(14),
            #"{"id":14,"result":{"created_at":"2027-01-15T08:00:00.000Z","key":"usk_0123/abcd","name":"ci","#
                + #""user_id":"u_01"}}"# + "\n"
        )
    }

    @Test func listAPIKeysResult() throws {
        try expectResult(
            ListAPIKeysRequest.Result(
                userID: "u_01",
                apiKeys: [
                    APIKeyInfo(name: "ci", createdAt: Fixtures.t0),
                    APIKeyInfo(name: "deploy", createdAt: Fixtures.at(86_400_000)),
                ]
            ),
            id: .int(15),
            #"{"id":15,"result":{"api_keys":[{"created_at":"2027-01-15T08:00:00.000Z","name":"ci"},"#
                + #"{"created_at":"2027-01-16T08:00:00.000Z","name":"deploy"}],"user_id":"u_01"}}"# + "\n"
        )
        try expectResult(
            ListAPIKeysRequest.Result(userID: "u_01", apiKeys: []),
            id: .int(16),
            #"{"id":16,"result":{"api_keys":[],"user_id":"u_01"}}"# + "\n"
        )
    }

    @Test func deleteAPIKeyResult() throws {
        try expectResult(
            DeleteAPIKeyRequest.Result(userID: "u_01", name: "ci"),
            id: .int(17),
            #"{"id":17,"result":{"name":"ci","user_id":"u_01"}}"# + "\n"
        )
    }

    @Test func jwksResultWritesOnlyPresentFields() throws {
        let result = JWKSRequest.Result(keys: [
            JWK(kty: "EC", kid: "k1", use: "sig", alg: "ES256", crv: "P-256", x: "f83O", y: "x_FE"),
            JWK(kty: "RSA", kid: "k2", use: "sig", alg: "RS256", n: "0vx7", e: "AQAB"),
            JWK(kty: "OKP"),
        ])
        try expectResult(
            result,
            id: .int(18),
            #"{"id":18,"result":{"keys":[{"alg":"ES256","crv":"P-256","kid":"k1","kty":"EC","use":"sig","#
                + #""x":"f83O","y":"x_FE"},{"alg":"RS256","e":"AQAB","kid":"k2","kty":"RSA","n":"0vx7","use":"sig"},"#
                + #"{"kty":"OKP"}]}}"# + "\n"
        )
        try expectResult(JWKSRequest.Result(keys: []), id: .int(19), #"{"id":19,"result":{"keys":[]}}"# + "\n")
    }

    @Test func loginBeginResults() throws {
        try expectResult(
            LoginBeginRequest.Result(
                type: .authorizationCode,
                status: "pending",
                provider: "corp",
                authorizeURL: "https://id.example.com/authorize?client_id=usher",
                state: "st",
                codeVerifier: "cv",
                redirectURI: "http://127.0.0.1:8123/callback",
                expiresAt: Fixtures.t0
            ),
            id: .int(30),
            #"{"id":30,"result":{"authorize_url":"https://id.example.com/authorize?client_id=usher","#
                + #""code_verifier":"cv","expires_at":"2027-01-15T08:00:00.000Z","login_id":null,"provider":"corp","#
                + #""redirect_uri":"http://127.0.0.1:8123/callback","state":"st","status":"pending","#
                + #""type":"authorization_code","user_code":null,"verification_uri":null,"#
                + #""verification_uri_complete":null}}"# + "\n"
        )
        try expectResult(
            LoginBeginRequest.Result(
                type: .deviceCode,
                status: "pending",
                provider: "corp",
                loginID: "corp.abc",
                verificationURI: "https://id.example.com/device",
                userCode: "WDJB-MJHT",
                expiresAt: Fixtures.at(600_000)
            ),
            id: .int(31),
            #"{"id":31,"result":{"authorize_url":null,"code_verifier":null,"expires_at":"2027-01-15T08:10:00.000Z","#
                + #""login_id":"corp.abc","provider":"corp","redirect_uri":null,"state":null,"status":"pending","#
                + #""type":"device_code","user_code":"WDJB-MJHT","verification_uri":"https://id.example.com/device","#
                + #""verification_uri_complete":null}}"# + "\n"
        )
    }

    @Test func subscribeResult() throws {
        try expectResult(
            SubscribeRequest.Result(generation: 20, subscribed: [.userLoggedIn, .daemonStopping]),
            id: .int(20),
            #"{"id":20,"result":{"generation":20,"subscribed":["user_logged_in","daemon_stopping"]}}"# + "\n"
        )
        try expectResult(
            SubscribeRequest.Result(generation: 21, subscribed: EventName.allCases),
            id: .int(21),
            #"{"id":21,"result":{"generation":21,"subscribed":["user_logged_in","active_user_changed","#
                + #""user_logged_out","user_removed","user_changed","token_refreshed","refresh_failed","daemon_stopping","#
                + #""seat_added","seat_removed","switch_pending","lease_broken","seat_locked","seat_unlocked"]}}"#
                + "\n"
        )
    }

    @Test func statusResultWithNulls() throws {
        let result = StatusRequest.Result(
            version: "0.1.0",
            uptimeSeconds: 3600,
            generation: 12,
            users: UserCounts(loggedIn: 0, loggedOut: 2),
            activeUserID: nil,
            connections: 1,
            refresh: RefreshCounters(scheduled: 0, nextAt: nil, succeeded: 40, failed: 1)
        )
        try expectResult(
            result,
            id: .int(22),
            #"{"id":22,"result":{"active_user_id":null,"connections":1,"generation":12,"#
                + #""refresh":{"failed":1,"next_at":null,"scheduled":0,"succeeded":40},"uptime_seconds":3600,"#
                + #""users":{"logged_in":0,"logged_out":2},"version":"0.1.0"}}"# + "\n"
        )
    }

    @Test func statusResultWithEveryField() throws {
        let result = StatusRequest.Result(
            version: "0.1.0",
            uptimeSeconds: 0,
            generation: 1,
            users: UserCounts(loggedIn: 3, loggedOut: 0),
            activeUserID: "u_01",
            connections: 0,
            refresh: RefreshCounters(
                scheduled: 3,
                nextAt: Fixtures.at(3_000_000),
                succeeded: 0,
                failed: 0
            )
        )
        try expectResult(
            result,
            id: nil,
            #"{"id":null,"result":{"active_user_id":"u_01","connections":0,"generation":1,"#
                + #""refresh":{"failed":0,"next_at":"2027-01-15T08:50:00.000Z","scheduled":3,"succeeded":0},"#
                + #""uptime_seconds":0,"users":{"logged_in":3,"logged_out":0},"version":"0.1.0"}}"# + "\n"
        )
    }

    @Test func resultIDsAreEchoedVerbatim() throws {
        let result = RemoveUserRequest.Result(generation: 1, userID: "u")
        let body = #""result":{"generation":1,"user_id":"u"}}"# + "\n"
        try expectResult(result, id: .int(-3), #"{"id":-3,"# + body)
        try expectResult(result, id: .int(.max), #"{"id":9223372036854775807,"# + body)
        try expectResult(result, id: .double(1.5), #"{"id":1.5,"# + body)
        try expectResult(result, id: .string(""), #"{"id":"","# + body)
        try expectResult(result, id: .string("a/b \"c\""), #"{"id":"a/b \"c\"","# + body)
        try expectResult(result, id: nil, #"{"id":null,"# + body)
    }
}
