import Logging
import UsherCore
import UsherProtocol

extension ResponseError {
    /// The one place where any error becomes its wire form. Anything unexpected becomes `internal` with a generic
    /// message; its details go to the log (errors never carry secrets, but unexpected ones are not shown to peers).
    package init(mapping error: any Error, logger: Logger) {
        switch error {
        case let error as ResponseError:
            self = error
        case let refusal as LoginThrottle.Refusal:
            let seconds = refusal.retryAfterSeconds
            let whose = refusal.scope == .account ? "for this account" : "from this user"
            self = .rateLimited("too many failed logins \(whose); try again in \(seconds) s", retryAfter: seconds)
        case is CancellationError:
            // Only ever seen in the audit record: a request cancelled by a stopping daemon whose grace was over (or a
            // `login_wait` whose client left, audited `cancelled` instead). A request is not cancelled because its
            // client left (`ClientPresence`).
            self.init(.internal, "the request was cancelled before it was answered")
        case let error as SessionError:
            switch error {
            case .providerNotFound(let name):
                self.init(.providerNotFound, "no provider named \"\(name)\" is configured")
            case .userNotFound(let id):
                self.init(.userNotFound, "no user \"\(id)\" is on this device")
            case .userLoggedOut(let id):
                self.init(.userLoggedOut, "user \(id) is logged out")
            case .noActiveUser:
                self.init(.noActiveUser, "no user is logged in")
            case .conflict(let expected, let actual):
                self.init(.conflict, "the generation is \(actual), not \(expected): the state changed meanwhile")
            case .unsupported(let message):
                self.init(.unsupportedCredentials, message)
            case .apiKeyNotFound(let name):
                self.init(.apiKeyNotFound, "no API key named \"\(name)\"")
            case .invalidCursor:
                self = ParamsDecoder.invalid(
                    "after",
                    "params.after is not a cursor this daemon issued (pass a page's next)"
                )
            case .notReady, .stopping:
                self.init(.shuttingDown, "usherd is stopping; try again once it is back")
            case .userActiveElsewhere(let userID, let seat):
                self.init(
                    .userActiveElsewhere,
                    "user \(userID) is active on seat \(seat); send \"move\": true to move them",
                    data: ["seat": .string(seat)]
                )
            case .inhibited(let seat, let holders):
                self.init(
                    .inhibited,
                    "\(holders.count) lease(s) hold the active user of seat \(seat) in place",
                    data: ["seat": .string(seat), "holders": .array(holders.map(\.jsonValue))]
                )
            case .seatNotFound(let seat):
                self.init(.seatNotFound, "no seat named \"\(seat.prefix(64))\"")
            case .leaseNotFound(let lease):
                self.init(.leaseNotFound, "this connection holds no lease \"\(lease.prefix(64))\"")
            case .tooManyLeases(let limit):
                self.init(.tooManyLeases, "this uid holds \(limit) leases already (leases.max_per_uid)")
            case .outsideSeatScope(let seat):
                let about = seat.map { "seat \($0.prefix(64))" } ?? "a user who is active on none of them"
                self.init(
                    .permissionDenied,
                    "this peer's permission is limited to seats, and the request is about \(about)"
                )
            case .invalidLink(let message):
                self.init(.invalidLink, message)
            case .identityInUse:
                self.init(.identityInUse, "this identity belongs to another user; that user is unchanged")
            case .notSupported(let message):
                self.init(.notSupported, message)
            case .notYours(let id, let action):
                self.init(
                    .permissionDenied,
                    "user \(id)'s session was opened by another uid: only that uid, root and usherd's own uid may \(action) it"
                )
            case .loginNotYours:
                self.init(
                    .permissionDenied,
                    "this login was begun by another uid: only that uid, root and usherd's own uid may wait for it"
                )
            case .identitiesChanging:
                self.init(.conflict, "other logins changed who owns this identity meanwhile; try again")
            case .identityMismatch(let expected, let actual):
                let got = actual.map { "the account \($0.prefix(256))" } ?? "an account without a verified email"
                self.init(
                    .identityMismatch,
                    "the provider authenticated \(got), not \(expected.prefix(256)); nothing was changed"
                )
            case .bindingNotFound(let id):
                self = ParamsDecoder.invalid(
                    "binding",
                    "params.binding names no open session binding (\"\(id.prefix(80))\")"
                )
            case .seatLocked(let seat):
                self.init(
                    .seatLocked,
                    "seat \(seat.prefix(64)) is locked; unlock it (usher unlock) first",
                    data: ["seat": .string(seat)]
                )
            case .pinIncorrect:
                self.init(.pinIncorrect, "the PIN is not right")
            case .pinNotSet(let id):
                self.init(
                    .pinNotSet,
                    "user \(id) has no PIN (usher pin set); unlock the seat through logind or log in again"
                )
            }
        case let error as ProviderError:
            switch error {
            case .invalidCredentials(let message): self.init(.invalidCredentials, message)
            case .unsupportedCredentials(let message): self.init(.unsupportedCredentials, message)
            case .invalidParams(let parameter, let message): self = ParamsDecoder.invalid(parameter, message)
            case .accountExists: self.init(.accountExists, "an account with this email exists already")
            case .registrationDisabled: self.init(.registrationDisabled, "registration is turned off for this provider")
            case .unavailable(let message): self.init(.providerUnavailable, message)
            case .sessionRevoked(let message): self.init(.userLoggedOut, message)
            case .providerError(let code, let description):
                self.init(
                    .providerError,
                    "the provider answered \(code)" + (description.map { ": \($0.prefix(500))" } ?? "")
                )
            case .accessDenied(let message): self.init(.accessDenied, message)
            case .expiredToken(let message): self.init(.expiredToken, message)
            case .misconfigured(let message): self.init(.providerMisconfigured, message)
            case .rejected(_, let message): self.init(.providerRejected, message)
            case .accountUnconfirmed:
                self.init(.accountUnconfirmed, "the account is not confirmed yet; confirm it with confirm_user")
            case .invalidToken(let message): self.init(.invalidToken, message)
            }
        default:
            logger.error("request failed unexpectedly", metadata: ["error": "\(String(reflecting: error))"])
            self.init(.internal, "internal error; see the daemon's log")
        }
    }
}
