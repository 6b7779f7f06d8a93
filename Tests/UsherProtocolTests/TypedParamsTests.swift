import Testing
import UsherProtocol

/// `init(params:)` of every request: precise `invalid_params` errors, and `params` that read back as the same request.
@Suite("Typed params")
struct TypedParamsTests {
    @Test func changePasswordNeedsBothPasswordsAndReadsBack() throws {
        let request = ChangePasswordRequest(email: "ann@example.com", oldPassword: "a secret", newPassword: "b secret")
        #expect(try ChangePasswordRequest(params: request.params).params == request.params)
        #expect(request.params["old_password"] == "a secret")
        #expect(!request.description.contains("secret"))
        #expect(throws: ResponseError(.invalidParams, "params.new_password is required")) {
            try ChangePasswordRequest(params: Params(["email": "ann@example.com", "old_password": "a secret"]))
        }
    }

    @Test func passwordResetAndConfirmationRequestsReadBackWithoutShowingSecrets() throws {
        let reset = ResetPasswordRequest(email: "ann@example.com", newPassword: "b secret")
        #expect(try ResetPasswordRequest(params: reset.params).params == reset.params)
        #expect(!reset.description.contains("secret"))
        let complete = CompletePasswordResetRequest(provider: "local", token: "tok-secret", newPassword: "b secret")
        #expect(try CompletePasswordResetRequest(params: complete.params).params == complete.params)
        #expect(!complete.description.contains("secret"))
        let confirm = ConfirmUserRequest(token: "tok-secret")
        #expect(try ConfirmUserRequest(params: confirm.params).params == confirm.params)
        #expect(!confirm.description.contains("secret"))
        let resend = ResendConfirmationRequest(email: "ann@example.com")
        #expect(try ResendConfirmationRequest(params: resend.params).params == resend.params)
        let request = RequestPasswordResetRequest(provider: "local", email: "ann@example.com")
        #expect(try RequestPasswordResetRequest(params: request.params).params == request.params)
        #expect(throws: ResponseError(.invalidParams, "params.token is required")) {
            try CompletePasswordResetRequest(params: Params(["new_password": "b secret"]))
        }
        #expect(throws: ResponseError(.invalidParams, "params.new_password is required")) {
            try ResetPasswordRequest(params: Params(["email": "ann@example.com"]))
        }
    }

    @Test func updateProfileTakesNamePictureAndLocaleAndReadsBack() throws {
        let request = UpdateProfileRequest(userID: "u_1", changes: ["name": "Ada", "locale": .null])
        let read = try UpdateProfileRequest(params: request.params)
        #expect(read.params == request.params)
        #expect(read.changes == ["name": "Ada", "locale": .null])
        #expect(throws: ResponseError(.invalidParams, "update_profile needs at least one of name, picture, locale")) {
            try UpdateProfileRequest(params: Params(["user_id": "u_1", "email": "x@example.com"]))
        }
        #expect(throws: ResponseError(.invalidParams, "params.picture must be a string, not number")) {
            try UpdateProfileRequest(params: Params(["picture": 3]))
        }
        try expectRoundTrip(RefreshProfileRequest(userID: "u_1", seat: "seat0")) {
            #expect($0.userID == "u_1")
            #expect($0.seat == "seat0")
        }
    }

    // MARK: - requests without parameters

    @Test func requestsWithoutParametersIgnoreWhateverIsSent() throws {
        let sent = Params(["user_id": 3, "x": [1, 2], "credentials": "nope"])
        #expect(try HelloRequest(params: sent).params == Params())
        #expect(try ProvidersRequest(params: sent).params == Params())
        #expect(try CurrentUserRequest(params: sent).params == Params())
        #expect(try ListUsersRequest(params: sent).params == Params())
        #expect(try JWKSRequest(params: sent).params == Params())
        #expect(try StatusRequest(params: sent).params == Params())
        #expect(HelloRequest().request == Request(id: nil, method: "hello"))
        #expect(StatusRequest().request == Request(id: nil, method: "status"))
    }

    // MARK: - register

    @Test func register() throws {
        try expectRoundTrip(RegisterRequest(email: "ada@example.com", password: "pw")) {
            #expect($0.provider == nil)
            #expect($0.email == "ada@example.com")
            #expect($0.password == "pw")
        }
        try expectRoundTrip(RegisterRequest(provider: "local", email: "e", password: "")) {
            #expect($0.provider == "local")
            #expect($0.password == "")
        }
        expectInvalid(RegisterRequest.self, ["password": "pw"], "params.email is required")
        expectInvalid(RegisterRequest.self, ["email": nil, "password": "pw"], "params.email is required")
        expectInvalid(RegisterRequest.self, ["email": "e"], "params.password is required")
        expectInvalid(
            RegisterRequest.self,
            ["email": 1, "password": "pw"],
            "params.email must be a string, not number"
        )
        expectInvalid(
            RegisterRequest.self,
            ["email": "e", "password": ["x"]],
            "params.password must be a string, not array"
        )
        expectInvalid(
            RegisterRequest.self,
            ["email": "e", "password": "p", "provider": true],
            "params.provider must be a string, not boolean"
        )
    }

    // MARK: - login

    @Test func login() throws {
        try expectRoundTrip(LoginRequest.emailPassword(email: "ada@example.com", password: "pw")) {
            #expect($0.provider == nil)
            #expect($0.credentialType == "email_password")
            #expect($0.credentials == ["type": "email_password", "email": "ada@example.com", "password": "pw"])
        }
        try expectRoundTrip(LoginRequest.anonymous(provider: "guest")) {
            #expect($0.provider == "guest")
            #expect($0.credentials == ["type": "anonymous"])
        }
        try expectRoundTrip(LoginRequest.apiKey(provider: "local", key: "usk_1")) {
            #expect($0.credentialType == "api_key")
            #expect($0.credentials["key"] == "usk_1")
        }
        // A type another provider defines, with fields of any shape: passed through untouched.
        try expectRoundTrip(
            LoginRequest(credentials: ["type": "device_code", "code": ["a": [1, .double(2.5), nil]], "n": 3])
        ) {
            #expect($0.credentialType == "device_code")
            #expect($0.credentials["code"] == ["a": [1, .double(2.5), nil]])
        }
    }

    @Test func loginCredentialsErrors() {
        expectInvalid(LoginRequest.self, [:], "params.credentials is required")
        expectInvalid(LoginRequest.self, ["credentials": nil], "params.credentials is required")
        expectInvalid(
            LoginRequest.self,
            ["credentials": "email_password"],
            "params.credentials must be an object, not string"
        )
        expectInvalid(
            LoginRequest.self,
            ["credentials": [["type": "anonymous"]]],
            "params.credentials must be an object, not array"
        )
        for credentials: JSONValue in [
            [:],
            ["email": "e", "password": "p"],
            ["type": nil],
            ["type": 1],
            ["type": true],
            ["type": ["anonymous"]],
            ["type": ["name": "anonymous"]],
            ["Type": "anonymous"],
        ] {
            expectInvalid(LoginRequest.self, ["credentials": credentials], "params.credentials.type")
        }
        expectInvalid(
            LoginRequest.self,
            ["credentials": ["type": "anonymous"], "provider": 5],
            "params.provider must be a string, not number"
        )
    }

    // MARK: - switch_user

    @Test func switchUser() throws {
        try expectRoundTrip(SwitchUserRequest(userID: "u_01")) {
            #expect($0.userID == "u_01")
            #expect($0.ifGeneration == nil)
        }
        for generation: Int64 in [0, 1, 4_294_967_296, .max] {
            try expectRoundTrip(SwitchUserRequest(userID: "u_01", ifGeneration: generation)) {
                #expect($0.ifGeneration == generation)
            }
        }
        #expect(try SwitchUserRequest(params: Params(["user_id": "u", "if_generation": nil])).ifGeneration == nil)
        #expect(try SwitchUserRequest(params: Params(["user_id": "u", "if_generation": .double(7)])).ifGeneration == 7)
    }

    @Test func switchUserErrors() {
        expectInvalid(SwitchUserRequest.self, [:], "params.user_id is required")
        expectInvalid(SwitchUserRequest.self, ["if_generation": 1], "params.user_id is required")
        expectInvalid(SwitchUserRequest.self, ["user_id": 1], "params.user_id must be a string, not number")
        expectInvalid(
            SwitchUserRequest.self,
            ["user_id": "u", "if_generation": -1],
            "params.if_generation must be between 0 and 9223372036854775807"
        )
        expectInvalid(
            SwitchUserRequest.self,
            ["user_id": "u", "if_generation": "3"],
            "params.if_generation must be an integer, not string"
        )
        expectInvalid(
            SwitchUserRequest.self,
            ["user_id": "u", "if_generation": .double(2.5)],
            "params.if_generation must be an integer, not number"
        )
        expectInvalid(
            SwitchUserRequest.self,
            ["user_id": "u", "if_generation": .double(1e19)],
            "params.if_generation must be an integer, not number"
        )
        expectInvalid(
            SwitchUserRequest.self,
            ["user_id": "u", "if_generation": true],
            "params.if_generation must be an integer, not boolean"
        )
    }

    // MARK: - access_token

    @Test func accessToken() throws {
        try expectRoundTrip(AccessTokenRequest()) {
            #expect($0.userID == nil)
            #expect($0.minValid == nil)
        }
        try expectRoundTrip(AccessTokenRequest(userID: "u_01", minValid: 300)) {
            #expect($0.userID == "u_01")
            #expect($0.minValid == 300)
        }
        for minValid: Int64 in [0, 1, 60, 366 * 86_400] {
            try expectRoundTrip(AccessTokenRequest(minValid: minValid)) { #expect($0.minValid == minValid) }
        }
        #expect(AccessTokenRequest.defaultMinimumValidity == 60)
        #expect(try AccessTokenRequest(params: Params(["min_valid": .double(120)])).minValid == 120)
        #expect(try AccessTokenRequest(params: Params(["min_valid": nil, "user_id": nil])).minValid == nil)
    }

    @Test(arguments: [
        (JSONValue.int(-1), "params.min_valid must be between 0 and 31622400"),
        (.int(31_622_401), "params.min_valid must be between 0 and 31622400"),
        (.int(.min), "params.min_valid must be between 0 and 31622400"),
        (.int(.max), "params.min_valid must be between 0 and 31622400"),
        (.double(-60), "params.min_valid must be between 0 and 31622400"),
        (.double(0.5), "params.min_valid must be an integer, not number"),
        (.double(1e300), "params.min_valid must be an integer, not number"),
        (.string("60"), "params.min_valid must be an integer, not string"),
        (.bool(true), "params.min_valid must be an integer, not boolean"),
        (.array([60]), "params.min_valid must be an integer, not array"),
        (.object(["s": 60]), "params.min_valid must be an integer, not object"),
    ])
    func accessTokenMinValidErrors(minValid: JSONValue, message: String) {
        expectInvalid(AccessTokenRequest.self, ["min_valid": minValid], message)
    }

    @Test func accessTokenUserIDError() {
        expectInvalid(AccessTokenRequest.self, ["user_id": 7], "params.user_id must be a string, not number")
    }

    // MARK: - requests with an optional user_id

    @Test func optionalUserID() throws {
        try expectRoundTrip(LogoutRequest()) { #expect($0.userID == nil) }
        try expectRoundTrip(LogoutRequest(userID: "u_01")) { #expect($0.userID == "u_01") }
        try expectRoundTrip(RefreshRequest()) { #expect($0.userID == nil) }
        try expectRoundTrip(RefreshRequest(userID: "u_01")) { #expect($0.userID == "u_01") }
        try expectRoundTrip(ListAPIKeysRequest()) { #expect($0.userID == nil) }
        try expectRoundTrip(ListAPIKeysRequest(userID: "u_01")) { #expect($0.userID == "u_01") }

        expectInvalid(LogoutRequest.self, ["user_id": 1], "params.user_id must be a string, not number")
        expectInvalid(RefreshRequest.self, ["user_id": ["u"]], "params.user_id must be a string, not array")
        expectInvalid(ListAPIKeysRequest.self, ["user_id": false], "params.user_id must be a string, not boolean")
        #expect(try LogoutRequest(params: Params(["user_id": nil])).userID == nil)
    }

    // MARK: - remove_user

    @Test func removeUser() throws {
        try expectRoundTrip(RemoveUserRequest(userID: "u_02")) { #expect($0.userID == "u_02") }
        expectInvalid(RemoveUserRequest.self, [:], "params.user_id is required")
        expectInvalid(RemoveUserRequest.self, ["user_id": nil], "params.user_id is required")
        expectInvalid(RemoveUserRequest.self, ["user_id": ["a": 1]], "params.user_id must be a string, not object")
    }

    // MARK: - API keys

    @Test func createAPIKey() throws {
        try expectRoundTrip(CreateAPIKeyRequest(name: "ci")) {
            #expect($0.name == "ci")
            #expect($0.userID == nil)
        }
        try expectRoundTrip(CreateAPIKeyRequest(name: "ci", userID: "u_01")) { #expect($0.userID == "u_01") }
        expectInvalid(CreateAPIKeyRequest.self, [:], "params.name is required")
        expectInvalid(CreateAPIKeyRequest.self, ["user_id": "u"], "params.name is required")
        expectInvalid(CreateAPIKeyRequest.self, ["name": 1], "params.name must be a string, not number")
        expectInvalid(
            CreateAPIKeyRequest.self,
            ["name": "ci", "user_id": 2],
            "params.user_id must be a string, not number"
        )
    }

    @Test func deleteAPIKey() throws {
        try expectRoundTrip(DeleteAPIKeyRequest(name: "ci")) { #expect($0.name == "ci") }
        try expectRoundTrip(DeleteAPIKeyRequest(name: "ci", userID: "u_01")) { #expect($0.userID == "u_01") }
        expectInvalid(DeleteAPIKeyRequest.self, [:], "params.name is required")
        expectInvalid(DeleteAPIKeyRequest.self, ["name": nil], "params.name is required")
        expectInvalid(DeleteAPIKeyRequest.self, ["name": true], "params.name must be a string, not boolean")
    }

    // MARK: - subscribe

    @Test func subscribe() throws {
        try expectRoundTrip(SubscribeRequest()) { #expect($0.events == nil) }
        try expectRoundTrip(SubscribeRequest(events: [])) { #expect($0.events == []) }
        try expectRoundTrip(SubscribeRequest(events: EventName.allCases)) { #expect($0.events == EventName.allCases) }
        try expectRoundTrip(SubscribeRequest(events: [.daemonStopping, .userLoggedIn])) {
            #expect($0.events == [.daemonStopping, .userLoggedIn])
        }
        #expect(try SubscribeRequest(params: Params(["events": nil])).events == nil)
        #expect(
            SubscribeRequest(events: [.tokenRefreshed]).params == Params(["events": ["token_refreshed"]])
        )
    }

    @Test func subscribeErrors() {
        expectInvalid(SubscribeRequest.self, ["events": ["user_logged_on"]], #"unknown event "user_logged_on""#)
        expectInvalid(
            SubscribeRequest.self,
            ["events": ["user_logged_in", "USER_LOGGED_OUT"]],
            #"params.events: unknown event "USER_LOGGED_OUT""#
        )
        expectInvalid(SubscribeRequest.self, ["events": [""]], #"unknown event """#)
        expectInvalid(SubscribeRequest.self, ["events": "user_logged_in"], "params.events must be an array of strings")
        expectInvalid(SubscribeRequest.self, ["events": ["user_logged_in", 3]], "params.events must be an array")
        expectInvalid(SubscribeRequest.self, ["events": [nil]], "params.events must be an array of strings, not null")
        expectInvalid(SubscribeRequest.self, ["events": ["names": []]], "not object")
    }

    // MARK: - login_begin, login_wait

    @Test func loginBeginAndWait() throws {
        try expectRoundTrip(LoginBeginRequest()) {
            #expect($0.provider == nil)
            #expect($0.type == nil)
            #expect($0.redirectURI == nil)
        }
        try expectRoundTrip(
            LoginBeginRequest(provider: "corp", type: .authorizationCode, redirectURI: "http://127.0.0.1:5/cb")
        ) {
            #expect($0.provider == "corp")
            #expect($0.redirectURI == "http://127.0.0.1:5/cb")
        }
        try expectRoundTrip(LoginBeginRequest(type: .deviceCode)) { #expect($0.type == .deviceCode) }
        expectInvalid(LoginBeginRequest.self, ["type": "password"], "params.type must be")
        expectInvalid(LoginBeginRequest.self, ["type": 1], "params.type must be a string")
        expectInvalid(
            LoginBeginRequest.self,
            ["type": "device_code", "redirect_uri": "http://127.0.0.1:5/cb"],
            "params.redirect_uri goes with type \"authorization_code\" only"
        )
        try expectRoundTrip(LoginWaitRequest(loginID: "corp.abc")) { #expect($0.loginID == "corp.abc") }
        expectInvalid(LoginWaitRequest.self, [:], "params.login_id is required")
        expectInvalid(LoginWaitRequest.self, ["login_id": 7], "params.login_id must be a string")
    }

    // MARK: - through the wire

    @Test func typedRequestsSurviveTheWire() throws {
        let requests: [any UsherRequest] = [
            HelloRequest(), ProvidersRequest(), RegisterRequest(provider: "p", email: "e", password: "p/w"),
            LoginRequest.emailPassword(email: "e", password: "p"), CurrentUserRequest(), ListUsersRequest(),
            SwitchUserRequest(userID: "u", ifGeneration: 9), LogoutRequest(userID: "u"), RemoveUserRequest(userID: "u"),
            AccessTokenRequest(userID: "u", minValid: 0), RefreshRequest(), CreateAPIKeyRequest(name: "n"),
            ListAPIKeysRequest(), DeleteAPIKeyRequest(name: "n", userID: "u"), JWKSRequest(),
            SubscribeRequest(events: [.userRemoved]), StatusRequest(),
            LoginBeginRequest(provider: "p", type: .deviceCode), LoginWaitRequest(loginID: "p.x"),
        ]
        for typed in requests {
            var request = typed.request
            request.id = .int(1)
            let line = LineCodec.encode(request)
            let decoded = try LineCodec.decodeRequest(line.dropLast())
            #expect(decoded == request)
            #expect(decoded.method == type(of: typed).method.rawValue)
            #expect(try reinterpret(typed, decoded.params) == typed.params)
        }
    }
}

// MARK: - Helpers

private func reinterpret<R: UsherRequest>(_ request: R, _ params: Params) throws -> Params {
    try R(params: params).params
}

/// Checks that `params` of a request reads back as an equal request: the same `params`, and the same fields (checked
/// by `check`, since requests are not `Equatable`).
private func expectRoundTrip<R: UsherRequest>(
    _ request: R,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ check: (R) throws -> Void
) throws {
    try check(request)
    let decoded = try R(params: request.params)
    #expect(decoded.params == request.params, sourceLocation: sourceLocation)
    try check(decoded)
    #expect(request.request == Request(id: nil, method: R.method.rawValue, params: request.params))
}

/// Checks that `params` are refused as `invalid_params` with a message containing `message`.
private func expectInvalid<R: UsherRequest>(
    _ type: R.Type,
    _ params: [String: JSONValue],
    _ message: String,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    guard let error = interpret(type, params).failure else {
        Issue.record("\(R.self) accepted \(params)", sourceLocation: sourceLocation)
        return
    }
    #expect(error.code == .invalidParams, sourceLocation: sourceLocation)
    #expect(error.message.contains(message), "\(error.message)", sourceLocation: sourceLocation)
}
