/// Where a peer's permission for a request holds: on every seat, or only on some (`[[access.rule]] seats = [...]`).
///
/// A seat-scoped permission covers a request only when every seat the request is about is one of its seats, and the
/// request is about at least one seat: a request about no seat at all (a user who is active nowhere, the device as a
/// whole) is outside every seat-scoped rule. What a request is about is decided per method (the table in
/// `docs/seats-and-leases.md`); this type is the one check that every method's seats go through, whether the request
/// is answered from the published view or by a change in the registry.
package enum SeatScope: Sendable, Hashable {
    /// Every seat, and requests about no seat.
    case everywhere
    /// These seats only.
    case seats(Set<String>)

    /// Whether a request about `seats` is covered.
    package func covers(_ seats: some Collection<String>) -> Bool {
        switch self {
        case .everywhere: true
        case .seats(let allowed): !seats.isEmpty && seats.allSatisfy(allowed.contains)
        }
    }

    /// Throws `outsideSeatScope` unless a request about `seats` is covered.
    package func require(_ seats: some Collection<String>) throws(SessionError) {
        guard !self.covers(seats) else { return }
        guard case .seats(let allowed) = self else { return }
        let outside = seats.filter { !allowed.contains($0) }.sorted().first
        throw .outsideSeatScope(seat: outside)
    }

    /// The seats, when limited.
    package var limitedTo: Set<String>? {
        switch self {
        case .everywhere: nil
        case .seats(let seats): seats
        }
    }
}
