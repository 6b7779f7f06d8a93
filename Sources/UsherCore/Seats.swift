/// Which seats the device has (`[seats]`), and which one a request that names none is about.
///
/// A seat is a place with its own active user at the same time as the others: a car's driver display and rear
/// displays, logind's `seat0` and `seat1`. A device that declares nothing has one seat, `seat0`, and behaves as
/// usher always did.
package struct SeatConfiguration: Sendable, Hashable {
    /// Where seats come from.
    package enum Source: String, Sendable, Hashable {
        /// The seats systemd-logind knows, plus `names`; a caller's seat is its logind session's.
        case logind
        /// Only `names` (and the default seat).
        case config
    }

    /// Whom each seat's active user follows (`[seats] follow`).
    package enum Follow: String, Sendable, Hashable {
        /// Nobody: the active user changes only through usher's own methods.
        case none
        /// logind's active session on the seat, and its lock (`LogindFollower`).
        case logind
    }

    package static let defaultSeatName = "seat0"

    package var source: Source
    /// Seats declared in the configuration.
    package var names: [String]
    /// The seat of a request that names none and whose caller has no seat.
    package var defaultSeat: String
    /// `[seats] follow`.
    package var follow = Follow.none
    /// `[seats.follow_map]`: Unix user name → usher account email, for logind sessions no `open_session` bound.
    package var followMap: [String: String] = [:]
    /// `[seats] lock_after_pin_failures`: wrong PINs in a row after which the user is logged out.
    package var lockAfterPINFailures = 10

    package init(source: Source = .config, names: [String] = [], defaultSeat: String = Self.defaultSeatName) {
        self.source = source
        self.names = names
        self.defaultSeat = defaultSeat
    }

    /// Whether answers and events name their seat: on a device with several seats (or logind's), yes; a device with
    /// one seat answers exactly as before seats existed.
    package var namesSeats: Bool { self.source == .logind || self.configuredSeats.count > 1 }

    /// The configured seats, the default first, each once.
    package var configuredSeats: [String] {
        var seen: Set<String> = []
        return ([self.defaultSeat] + self.names).filter { seen.insert($0).inserted }
    }
}

/// Each seat's active user, both ways round: a user is active on at most one seat.
package struct SeatAssignments: Sendable, Hashable {
    private(set) var userBySeat: [String: String] = [:]
    private var seatByUser: [String: String] = [:]

    package init() {}

    package init(_ userBySeat: [String: String]) {
        for (seat, user) in userBySeat.sorted(by: { $0.key < $1.key }) { self.set(user, on: seat) }
    }

    package func user(on seat: String) -> String? { self.userBySeat[seat] }

    package func seat(of userID: String) -> String? { self.seatByUser[userID] }

    /// Every seat that has an active user, with that user.
    package var all: [String: String] { self.userBySeat }

    /// Makes `userID` the active user of `seat` (nil: none). A user active on another seat leaves that seat, which
    /// then has none.
    package mutating func set(_ userID: String?, on seat: String) {
        if let previous = self.userBySeat.removeValue(forKey: seat) { self.seatByUser[previous] = nil }
        guard let userID else { return }
        if let elsewhere = self.seatByUser[userID] { self.userBySeat[elsewhere] = nil }
        self.userBySeat[seat] = userID
        self.seatByUser[userID] = seat
    }

    /// The user is active on no seat any more.
    package mutating func clear(user userID: String) {
        guard let seat = self.seatByUser.removeValue(forKey: userID) else { return }
        self.userBySeat[seat] = nil
    }
}
