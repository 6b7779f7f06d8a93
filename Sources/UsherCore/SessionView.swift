import Synchronization
import UsherProtocol

/// The committed session state as readers see it: the registry publishes every change here once it is on disk, and
/// the socket server answers `current_user`, `list_users` and fresh `access_token` requests from it on the
/// connection's event loop, with no hop to the registry actor. The view speaks in the core's values (`ActiveUser`,
/// `UserPage`, `IssuedToken`), not bytes: the server passes the encoder of its wire format, which maps them to its
/// results, and the view keeps the bytes it returned until the next change.
///
/// A read takes the lock for a dictionary lookup or a copy-on-write reference; the `current_user` answer is encoded
/// once per change (not per request). Writers are the registry alone, one change at a time, in commit order.
package final class SessionView: Sendable {
    /// The parts of a user's refresh state that clients see. Only users with a state of their own have one (a refresh
    /// in flight, a retry, a deadline other than the rules'); memory for 100,000 users does not hold 100,000 of them.
    package struct TokenView: Sendable, Hashable {
        package var refreshing = false
        package var retryAt: Timestamp?
        package var lastError: ErrorCode?
        package var nextRefreshAt: Timestamp?

        package init(
            refreshing: Bool = false,
            retryAt: Timestamp? = nil,
            lastError: ErrorCode? = nil,
            nextRefreshAt: Timestamp? = nil
        ) {
            self.refreshing = refreshing
            self.retryAt = retryAt
            self.lastError = lastError
            self.nextRefreshAt = nextRefreshAt
        }
    }

    struct Published {
        var state = SessionState()
        var tokens: [String: TokenView] = [:]
        /// `current_user`'s answer per seat, as the server encoded it at the first request after a change (a change
        /// moves the generation every answer carries, so it empties the table).
        var currentUserAnswer: [String: [UInt8]] = [:]
        /// Every known seat: where it comes from and whether it is there now.
        var seatDirectory: [String: SeatEntry] = [:]
        /// Whether answers name their seat (`SeatConfiguration.namesSeats`).
        var namesSeats = false
        /// The locked seats, with who locked each (`SessionRegistry+Locks`).
        var locks: [String: SeatLockAgent] = [:]
        /// The whole `list_users` answer of a small device, as the server encoded it at the first request after a
        /// change.
        var listAnswer: [UInt8]?
        /// The first page of `list_users` for one `limit` (the page a client reads again and again), as the server
        /// encoded it at the first such request after a change: the whole answer, `next` included (the pass it
        /// begins is the current generation, which only a change moves).
        var firstPageAnswer: (limit: Int, bytes: [UInt8])?

        /// A change to what a user's entry shows: the lists encoded before it are stale.
        mutating func forgetListAnswers() {
            self.listAnswer = nil
            self.firstPageAnswer = nil
        }
        /// The last `access_token` answer: a program asking for the active user's token in a loop gets these bytes
        /// until the token or its remaining whole seconds change.
        var tokenAnswer: TokenAnswerCache?
        /// The rules that place a user's next refresh when it has no refresh state of its own.
        var deadlines = TokenDeadlines(refreshMarginMilliseconds: 300_000)
    }

    struct TokenAnswerCache {
        var userID: String
        var tokens: TokenSet
        var expiresIn: Int64
        var bytes: [UInt8]
    }

    /// A seat as `list_seats` shows it, without its active user (that is in the state).
    package struct SeatEntry: Sendable, Hashable {
        package var source: SeatConfiguration.Source
        package var present: Bool

        package init(source: SeatConfiguration.Source, present: Bool) {
            self.source = source
            self.present = present
        }
    }

    /// Internal for `+Tokens`.
    let published = Mutex(Published())
    let clock: any SessionClock

    package init(clock: any SessionClock) {
        self.clock = clock
    }

    // MARK: - Reads

    package var generation: Int64 { self.published.withLock { $0.state.generation } }

    /// `current_user`'s result for a seat (nil: the default seat) as `encode` writes it: encoded once per change and
    /// seat, and kept (the view keeps the caller's bytes without reading them: the wire format is the server's).
    package func currentUserAnswer(seat: String? = nil, encode: (ActiveUser) -> [UInt8]) -> [UInt8] {
        self.published.withLock { published in
            let seat = seat ?? published.state.defaultSeat
            if let cached = published.currentUserAnswer[seat] { return cached }
            let bytes = encode(Self.currentUser(in: published, seat: seat))
            published.currentUserAnswer[seat] = bytes
            return bytes
        }
    }

    package func currentUser(seat: String? = nil) -> ActiveUser {
        self.published.withLock { Self.currentUser(in: $0, seat: seat ?? $0.state.defaultSeat) }
    }

    /// The default seat's name.
    package var defaultSeat: String { self.published.withLock { $0.state.defaultSeat } }

    /// Whether a request may name this seat: it is configured, known to logind, or has state.
    package func isKnown(seat: String) -> Bool {
        self.published.withLock { $0.seatDirectory[seat] != nil || $0.state.seats.user(on: seat) != nil }
    }

    /// The seat a user is active on, if any.
    package func seat(of userID: String) -> String? {
        self.published.withLock { $0.state.seats.seat(of: userID) }
    }

    /// The active user of a seat (nil: the default seat).
    package func activeUser(on seat: String? = nil) -> String? {
        self.published.withLock { $0.state.seats.user(on: seat ?? $0.state.defaultSeat) }
    }

    /// `list_seats`: every known seat, by name.
    package func listSeats() -> SeatList {
        self.published.withLock { published in
            var names = Set(published.seatDirectory.keys)
            names.formUnion(published.state.seats.all.keys)
            return SeatList(
                generation: published.state.generation,
                defaultSeat: published.state.defaultSeat,
                seats: names.sorted().map { name in
                    let entry = published.seatDirectory[name]
                    return SeatList.Seat(
                        name: name,
                        source: entry?.source ?? .config,
                        present: entry?.present ?? false,
                        userID: published.state.seats.user(on: name)
                    )
                }
            )
        }
    }

    /// A user as clients see it, as committed.
    package func info(_ userID: String) -> UserInfo? {
        self.published.withLock { Self.info(userID, in: $0) }
    }

    /// `list_users`: every user.
    package func listUsers() -> UserPage {
        self.published.withLock { Self.page(in: $0, limit: nil, after: nil) }
    }

    /// The whole `list_users` result as `encode` writes it, when there are at most `maximumUsers` users: encoded once
    /// per change and kept; nil for a larger device, whose list is not kept encoded.
    package func listUsersAnswer(maximumUsers: Int, encode: (UserPage) -> [UInt8]) -> [UInt8]? {
        self.published.withLock { published in
            if let cached = published.listAnswer { return cached }
            guard published.state.count <= maximumUsers else { return nil }
            let (users, _) = published.state.page(after: nil, limit: maximumUsers)
            let bytes = encode(
                UserPage(
                    generation: published.state.generation,
                    users: users.map { Self.info($0, in: published) }
                )
            )
            published.listAnswer = bytes
            return bytes
        }
    }

    /// The first page of `list_users` with `limit` (no cursor) as `encode` writes it: encoded once per change and
    /// kept, for one `limit` at a time, when `limit` is at most `maximumCachedLimit` (a page is kept whole in memory).
    package func firstPageAnswer(limit: Int, encode: (UserPage) -> [UInt8]) -> [UInt8] {
        self.published.withLock { published in
            if let cached = published.firstPageAnswer, cached.limit == limit { return cached.bytes }
            let bytes = encode(Self.page(in: published, limit: limit, after: nil))
            if limit <= Self.maximumCachedLimit { published.firstPageAnswer = (limit, bytes) }
            return bytes
        }
    }

    /// The largest first page `firstPageAnswer` keeps.
    package static let maximumCachedLimit = 100

    /// `list_users`: every user, or a page of `limit` after the cursor `after`.
    ///
    /// A pass (the pages from the first to the one without `next`) lists the users there when its first page was
    /// read, in the order they were added, each at most once: one removed before its page is left out, and users
    /// added during the pass are not in it (a user removed and added again is added again, at the end of the
    /// order; listing it there would list it twice).
    ///
    /// - Throws: `invalidCursor` for a position this daemon cannot have handed out: naming a generation not reached
    ///   yet. (The server refuses a cursor not in the exact form it writes before asking.)
    package func listUsers(limit: Int?, after cursor: UserPage.Position?) throws(SessionError) -> UserPage {
        guard let cursor else { return self.published.withLock { Self.page(in: $0, limit: limit, after: nil) } }
        let result: UserPage? = self.published.withLock { published in
            // The generation only grows: a cursor naming one not reached yet was never issued.
            guard cursor.passGeneration <= published.state.generation else { return nil }
            return Self.page(in: published, limit: limit, after: cursor)
        }
        guard let result else { throw .invalidCursor }
        return result
    }

    /// A page of the published state: the first when `cursor` is nil (its pass begins at the current generation).
    private static func page(
        in published: Published,
        limit: Int?,
        after cursor: UserPage.Position?
    ) -> UserPage {
        let pass = cursor?.passGeneration ?? published.state.generation
        let (users, more) = published.state.page(
            after: cursor?.addedGeneration,
            through: pass,
            limit: limit ?? Int.max
        )
        let next =
            more && limit != nil
            ? users.last.map { UserPage.Position(addedGeneration: $0.addedGeneration, passGeneration: pass) }
            : nil
        return UserPage(
            generation: published.state.generation,
            users: users.map { Self.info($0, in: published) },
            next: next
        )
    }

    /// Counts for `status`.
    package func counts() -> (generation: Int64, loggedIn: Int, total: Int, activeUserID: String?, label: String?) {
        // `status` reports the default seat's active user: the device-wide one of a one-seat device.
        self.published.withLock { published in
            let active = published.state.activeUserID.flatMap { published.state[$0] }
            return (
                published.state.generation, published.state.loggedInCount, published.state.count,
                published.state.activeUserID, active.map { $0.email ?? $0.id }
            )
        }
    }

    // MARK: - Publishing (the registry only)

    /// Publishes one committed change: the users it saved or deleted, the generation and each seat's active user
    /// after it.
    func publish(
        saved: some Sequence<User>,
        deleted: some Sequence<String>,
        generation: Int64,
        seats: SeatAssignments
    ) {
        self.published.withLock { published in
            for id in deleted {
                published.state.remove(id)
                published.tokens[id] = nil
            }
            for user in saved { published.state.put(user) }
            published.state.generation = generation
            published.state.seats = seats
            published.currentUserAnswer.removeAll(keepingCapacity: true)
            published.forgetListAnswers()
        }
    }

    /// Replaces the whole published state (at start, after loading).
    func publish(_ state: SessionState) {
        self.published.withLock { published in
            published.state = state
            published.tokens = [:]
            published.currentUserAnswer = [:]
            published.forgetListAnswers()
        }
    }

    /// Publishes the seat directory (at start, and when logind adds or removes a seat).
    func publish(seatDirectory: [String: SeatEntry], namesSeats: Bool) {
        self.published.withLock { published in
            published.seatDirectory = seatDirectory
            if published.namesSeats != namesSeats { published.currentUserAnswer = [:] }
            published.namesSeats = namesSeats
        }
    }

    /// Publishes the deadline rules (at start and after a reload).
    func publish(deadlines: TokenDeadlines) {
        self.published.withLock { published in
            published.deadlines = deadlines
            published.forgetListAnswers()
            published.currentUserAnswer = [:]
        }
    }

    /// Publishes a user's refresh state (in memory only: not part of a commit); nil when it has none of its own.
    func publish(tokenView: TokenView?, of userID: String) {
        self.published.withLock { published in
            guard published.tokens[userID] != tokenView else { return }
            published.tokens[userID] = tokenView
            published.forgetListAnswers()
            if let seat = published.state.seats.seat(of: userID) { published.currentUserAnswer[seat] = nil }
        }
    }

    // MARK: - Answers

    private static func currentUser(in published: Published, seat: String) -> ActiveUser {
        ActiveUser(
            generation: published.state.generation,
            seat: published.namesSeats ? seat : nil,
            user: published.state.seats.user(on: seat).flatMap { Self.info($0, in: published) },
            locked: published.locks[seat] != nil
        )
    }

    private static func info(_ userID: String, in published: Published) -> UserInfo? {
        published.state[userID].map { Self.info($0, in: published) }
    }

    private static func info(_ user: User, in published: Published) -> UserInfo {
        UserInfo(
            user,
            status: published.tokens[user.id],
            active: published.state.seats.seat(of: user.id) != nil,
            deadlines: published.deadlines
        )
    }
}

extension UserInfo {
    /// A user as clients see it, from the registry's record and its refresh state. Without a refresh state of its own
    /// (the usual case), a user's next refresh is where the deadline rules put it.
    package init(_ user: User, status: SessionView.TokenView?, active: Bool, deadlines: TokenDeadlines) {
        let tokenState: TokenState
        if user.state == .loggedOut || user.tokens == nil {
            tokenState = .none
        } else if status?.refreshing == true {
            tokenState = .refreshing
        } else if status?.retryAt != nil {
            tokenState = .retrying
        } else {
            tokenState = .fresh
        }
        let loggedIn = user.state == .loggedIn
        self.init(
            id: user.id,
            provider: user.provider,
            kind: user.kind,
            email: user.email,
            name: user.name,
            state: loggedIn ? .loggedIn : .loggedOut,
            active: active,
            createdAt: user.createdAt,
            lastLoginAt: user.lastLoginAt,
            lastActiveAt: user.lastActiveAt,
            accessTokenExpiresAt: loggedIn ? user.tokens?.expiresAt : nil,
            refreshTokenExpiresAt: loggedIn ? user.tokens?.refreshExpiresAt : nil,
            tokenState: tokenState,
            nextRefreshAt: loggedIn
                ? status?.nextRefreshAt
                    ?? (user.tokens?.hasRefreshToken == true ? deadlines.nextDeadline(for: user) : nil)
                : nil,
            retryAt: loggedIn ? status?.retryAt : nil,
            lastRefreshError: loggedIn ? status?.lastError : nil,
            subject: user.subject,
            otherIdentities: user.otherIdentities,
            profile: user.profile,
            customData: user.customData
        )
    }
}
