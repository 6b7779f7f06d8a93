import Foundation
import Testing
import UsherProtocol

/// Values and helpers shared by the protocol tests. Every timestamp is chosen so that its wire form is easy to check
/// by hand (1_800_000_000_000 ms is 2027-01-15T08:00:00.000Z).
enum Fixtures {
    static let t0 = Timestamp(millisecondsSinceEpoch: 1_800_000_000_000)  // 2027-01-15T08:00:00.000Z

    static func at(_ offsetMilliseconds: Int64) -> Timestamp {
        t0.adding(milliseconds: offsetMilliseconds)
    }

    /// A user with every optional field set.
    static let fullUser = UserInfo(
        id: "u_01",
        provider: "local",
        kind: "email_password",
        email: "ada@example.com",
        name: "Ada Lovelace",
        state: .loggedIn,
        active: true,
        createdAt: t0,
        lastLoginAt: at(60_123),
        lastActiveAt: at(60_456),
        accessTokenExpiresAt: at(3_600_000),
        refreshTokenExpiresAt: Timestamp(millisecondsSinceEpoch: 1_831_536_000_000),
        tokenState: .retrying,
        nextRefreshAt: at(3_000_000),
        retryAt: at(90_000),
        lastRefreshError: .providerUnavailable,
        subject: "acct-1",
        otherIdentities: [Identity(provider: "local", kind: "anonymous", subject: "anonymous:9f")],
        profile: UserClaims(["name": "Ada Lovelace", "email_verified": true, "picture": "https://example.com/a/b.png"]),
        customData: UserClaims(["groups": ["eng", "ops"], "level": 3, "note": "quote \" and \\"])
    )

    static let fullUserJSON =
        #"{"access_token_expires_at":"2027-01-15T09:00:00.000Z","active":true,"#
        + #""created_at":"2027-01-15T08:00:00.000Z","#
        + #""custom_data":{"groups":["eng","ops"],"level":3,"note":"quote \" and \\"},"#
        + #""email":"ada@example.com","id":"u_01","#
        + #""identities":[{"kind":"email_password","provider":"local","subject":"acct-1"},"#
        + #"{"kind":"anonymous","provider":"local","subject":"anonymous:9f"}],"kind":"email_password","#
        + #""last_active_at":"2027-01-15T08:01:00.456Z","last_login_at":"2027-01-15T08:01:00.123Z","#
        + #""last_refresh_error":"provider_unavailable","name":"Ada Lovelace","#
        + #""next_refresh_at":"2027-01-15T08:50:00.000Z","#
        + #""profile":{"email_verified":true,"name":"Ada Lovelace","picture":"https://example.com/a/b.png"},"#
        + #""provider":"local","#
        + #""refresh_token_expires_at":"2028-01-15T08:00:00.000Z","retry_at":"2027-01-15T08:01:30.000Z","#
        + #""state":"logged_in","token_state":"retrying"}"#

    /// A logged-out anonymous user: every optional field is nil and must still be written, as `null`.
    static let bareUser = UserInfo(
        id: "u_02",
        provider: "guest",
        kind: "anonymous",
        email: nil,
        name: nil,
        state: .loggedOut,
        active: false,
        createdAt: Timestamp(millisecondsSinceEpoch: 1_700_000_000_000),
        lastLoginAt: nil,
        lastActiveAt: nil,
        accessTokenExpiresAt: nil,
        refreshTokenExpiresAt: nil,
        tokenState: .none,
        nextRefreshAt: nil,
        retryAt: nil,
        lastRefreshError: nil,
        subject: "anonymous:02"
    )

    static let bareUserJSON =
        #"{"access_token_expires_at":null,"active":false,"created_at":"2023-11-14T22:13:20.000Z","custom_data":{},"#
        + #""email":null,"id":"u_02","identities":[{"kind":"anonymous","provider":"guest","subject":"anonymous:02"}],"#
        + #""kind":"anonymous","last_active_at":null,"last_login_at":null,"#
        + #""last_refresh_error":null,"name":null,"next_refresh_at":null,"profile":{},"provider":"guest","#
        + #""refresh_token_expires_at":null,"retry_at":null,"#
        + #""state":"logged_out","token_state":"none"}"#
}

/// The bytes of a line as text, for readable comparisons.
func text(_ bytes: some Sequence<UInt8>) -> String {
    String(decoding: Array(bytes), as: UTF8.self)
}

/// A line without its `\n`, as the framing hands it over.
func withoutTerminator(_ line: String) -> [UInt8] {
    var bytes = Array(line.utf8)
    if bytes.last == UInt8(ascii: "\n") { bytes.removeLast() }
    return bytes
}

/// Decodes a request line, returning the failure instead of throwing it.
func decodeRequestResult(
    _ bytes: [UInt8],
    maximumDepth: Int = 64
) -> Result<Request, LineCodec.DecodingFailure> {
    do {
        return .success(try LineCodec.decodeRequest(bytes, maximumDepth: maximumDepth))
    } catch {
        return .failure(error)
    }
}

func decodeRequestResult(_ line: String, maximumDepth: Int = 64) -> Result<Request, LineCodec.DecodingFailure> {
    decodeRequestResult(Array(line.utf8), maximumDepth: maximumDepth)
}

/// Interprets typed parameters, returning the wire error instead of throwing it.
func interpret<R: UsherRequest>(_ type: R.Type, _ params: [String: JSONValue]) -> Result<R, ResponseError> {
    do {
        return .success(try R(params: Params(params)))
    } catch {
        return .failure(error)
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let failure) = self { return failure }
        return nil
    }

    var success: Success? {
        if case .success(let success) = self { return success }
        return nil
    }
}
