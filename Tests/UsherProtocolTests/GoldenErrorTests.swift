import Foundation
import Testing
import UsherProtocol

/// Golden JSON of error answers and the stable error codes.
@Suite("Golden JSON: errors")
struct GoldenErrorTests {
    @Test func errorWithIntegerID() throws {
        try expectError(
            ResponseError(.userNotFound, "no user u_9"),
            id: .int(7),
            #"{"error":{"code":"user_not_found","message":"no user u_9"},"id":7}"# + "\n"
        )
    }

    @Test func errorWithStringID() throws {
        try expectError(
            ResponseError(.invalidParams, "params.user_id is required"),
            id: .string("req/7"),
            #"{"error":{"code":"invalid_params","message":"params.user_id is required"},"id":"req/7"}"# + "\n"
        )
    }

    @Test func errorWithDoubleID() throws {
        try expectError(
            ResponseError(.conflict, "generation is 4, not 3"),
            id: .double(2.5),
            #"{"error":{"code":"conflict","message":"generation is 4, not 3"},"id":2.5}"# + "\n"
        )
    }

    @Test func errorWithoutID() throws {
        try expectError(
            ResponseError(.invalidRequest, "the line is not valid JSON"),
            id: nil,
            #"{"error":{"code":"invalid_request","message":"the line is not valid JSON"},"id":null}"# + "\n"
        )
    }

    @Test func errorMessageEscaping() throws {
        // Slashes stay as they are; quotes, backslashes and control characters are escaped; non-ASCII is UTF-8.
        try expectError(
            ResponseError(.internal, "see https://example.com/x \"quoted\" \\ tab\t é"),
            id: .int(1),
            #"{"error":{"code":"internal","message":"see https://example.com/x \"quoted\" \\ tab\t é"},"id":1}"#
                + "\n"
        )
    }

    @Test(arguments: ErrorCode.all)
    func everyErrorCode(code: ErrorCode) throws {
        try expectError(
            ResponseError(code, "m"),
            id: .int(1),
            #"{"error":{"code":""# + code.rawValue + #"","message":"m"},"id":1}"# + "\n"
        )
    }

    @Test func errorCodesAreStable() {
        #expect(
            ErrorCode.all.map(\.rawValue) == [
                "invalid_request", "unknown_method", "invalid_params", "line_too_long", "provider_not_found",
                "unsupported_credentials", "invalid_credentials", "account_exists", "registration_disabled",
                "user_not_found", "user_logged_out", "no_active_user", "conflict", "permission_denied",
                "api_key_not_found", "provider_unavailable", "too_many_connections", "internal", "provider_error",
                "access_denied", "expired_token", "provider_misconfigured", "rate_limited", "shutting_down",
                "user_active_elsewhere", "inhibited", "seat_not_found", "lease_not_found", "too_many_leases",
                "provider_rejected", "account_unconfirmed", "invalid_token", "invalid_link", "identity_in_use",
                "not_supported", "seat_locked", "pin_incorrect", "pin_not_set", "identity_mismatch",
            ]
        )
        #expect(Set(ErrorCode.all).count == ErrorCode.all.count)
    }

    @Test func rateLimitedCarriesRetryAfterInData() throws {
        // `data` is additive: only errors that carry details have it, so every other error line is unchanged.
        let error = ResponseError.rateLimited(
            "too many failed logins for this account; try again in 30 s",
            retryAfter: 30
        )
        try expectError(
            error,
            id: .int(4),
            #"{"error":{"code":"rate_limited","data":{"retry_after":30},"#
                + #""message":"too many failed logins for this account; try again in 30 s"},"id":4}"# + "\n"
        )
        guard
            case .response(_, .failure(let decoded)) = try LineCodec.decodeIncoming(
                LineCodec.encodeError(id: .int(4), error).dropLast()
            )
        else {
            Issue.record("not an error response")
            return
        }
        #expect(decoded == error)
        #expect(decoded.retryAfter == 30)
        #expect(ResponseError(.internal, "m").retryAfter == nil)
    }

    @Test func unknownErrorCodeStillDecodes() throws {
        let line = #"{"error":{"code":"from_the_future","message":"m"},"id":1}"#
        guard case .response(let id, .failure(let error)) = try LineCodec.decodeIncoming(Array(line.utf8)) else {
            Issue.record("not an error response")
            return
        }
        #expect(id == .int(1))
        #expect(error == ResponseError(ErrorCode("from_the_future"), "m"))
    }
}
