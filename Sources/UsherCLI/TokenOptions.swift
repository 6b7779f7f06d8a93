import ArgumentParser
import UsherClient

/// The options of the commands that hand out a token (`token`, `exec`): whose, and how long it must stay valid.
struct TokenOptions: ParsableArguments {
    @Option(help: "The user's id or email (default: the active user).", completion: UserCompletion.kind)
    var user: String?

    @Option(
        name: .customLong("min-valid"),
        parsing: .unconditional,
        help: ArgumentHelp(
            "How long the token must stay valid at least: seconds, or a duration such as 90s, 10m or 1h "
                + "(default: 60s).",
            valueName: "duration"
        ),
        transform: TokenOptions.seconds(parsing:)
    )
    var minValid: Int64?

    @Option(help: "The seat (default: yours as logind sees it, else the daemon's default seat).")
    var seat: String?

    @Option(help: "A narrowed token for this audience (a resource server's URI or name).")
    var audience: String?

    @Option(
        name: .customLong("scope"),
        help: "A narrowed token with no more than this scope; repeat for several (--scope read --scope write)."
    )
    var scopes: [String] = []

    /// What `--audience` and `--scope` ask for.
    var narrowing: TokenAudience {
        TokenAudience(audience: self.audience, scopes: self.scopes.isEmpty ? nil : self.scopes)
    }

    /// `90`, `90s`, `10m`, `1h`, `1d` (the configuration's durations; `ms` rounds up to whole seconds) in seconds.
    static func seconds(parsing text: String) throws -> Int64 {
        if text.hasPrefix("-") {
            throw ValidationError("must not be negative (the token must stay valid for at least 0 seconds)")
        }
        if let seconds = Int64(text) { return seconds }
        let units: [(String, Int64)] = [("ms", 1), ("s", 1000), ("m", 60_000), ("h", 3_600_000), ("d", 86_400_000)]
        for (suffix, factor) in units where text.hasSuffix(suffix) {
            let number = text.dropLast(suffix.count)
            guard !number.isEmpty, number.allSatisfy({ $0.isASCII && $0.isNumber }), let value = Int64(number) else {
                continue
            }
            let (milliseconds, overflow) = value.multipliedReportingOverflow(by: factor)
            guard !overflow else { break }
            return (milliseconds + 999) / 1000
        }
        throw ValidationError("not a duration: give seconds or a duration such as 90s, 10m or 1h")
    }

    /// The user id to ask for: an email is looked up among the users on the device, an id is passed on.
    func userID(on connection: BlockingConnection) throws -> String? {
        guard let user = self.user, user.contains("@") else { return self.user }
        return try Session.userID(forEmail: user, among: try connection.send(ListUsersRequest()).users)
    }

    /// The `access_token` request these options make (an email is looked up on `connection`).
    func request(on connection: BlockingConnection) throws -> AccessTokenRequest {
        AccessTokenRequest(
            userID: try self.userID(on: connection),
            minValid: self.minValid,
            seat: self.seat,
            narrowing: self.narrowing
        )
    }

    /// A token as `access_token` gives it, or the error that says why there is none; with `json`, also the JSON it
    /// was decoded from (otherwise the answer is decoded only into its type: `usher token` runs in shell prompts).
    func token(
        on connection: BlockingConnection,
        json: Bool = false
    ) throws -> (result: AccessTokenRequest.Result, json: JSONValue?) {
        try Self.token(try self.request(on: connection), on: connection, json: json)
    }

    /// `request`'s token, and with `json` the JSON it was decoded from.
    static func token(
        _ request: AccessTokenRequest,
        on connection: BlockingConnection,
        json: Bool
    ) throws -> (result: AccessTokenRequest.Result, json: JSONValue?) {
        guard json else { return (try connection.send(request), nil) }
        let (result, value) = try connection.sendReturningJSON(request)
        return (result, value)
    }
}
