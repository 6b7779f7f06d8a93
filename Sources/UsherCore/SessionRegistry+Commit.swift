import UsherProtocol

/// Changes: computed one at a time, committed in batches, published in order.
///
/// A change is a body that fills a `Draft` from the working state. Bodies run one at a time on the actor; each draft
/// is applied to the working state at once, so the next body sees it. Changes that arrive while a batch is being
/// written queue up and form the next batch: one transaction and one `fsync` for all of them (group commit). Only
/// after the commit are the drafts published to the view and the event hub, in order, and the callers answered. If
/// the commit fails, the working state is rolled back and each change of the batch is tried again on its own, so one
/// change that cannot be committed (a refresh whose grant is gone) fails alone.
///
/// Whoever queues a change while no batch is being written leads: it commits batches until its own change is done,
/// then hands the lead to the oldest waiting change.
extension SessionRegistry {
    /// What one change does, built from the working state and published only after it is durable.
    struct Draft {
        var saved: [String: User] = [:]
        var deleted: Set<String> = []
        var events: [Event.Payload] = []
        /// Whether the set of users, a state or the active user changes (and with it the generation).
        var changesGeneration = false
        /// Set when a user becomes active through login or switch, on `newlyActiveSeat` (nil: the default seat).
        var newlyActive: String?
        var newlyActiveSeat: String?
        /// Seats left with no active user (logind's active session there has no usher user: `+Locks`).
        var vacatedSeats: Set<String> = []
        /// Sessions to revoke at their provider once the change is durable.
        var revocations: [(provider: String, session: ProviderSession)] = []
        /// Providers' writes committed in the same transaction (a refresh's grant rotation).
        var pendingWrites: [any PendingWrite] = []
        /// Set when a session ends on its own (revoked, expired): the leases on the seats whose active user this
        /// changes did not hold it back, and their holders are told why (`lease_broken`).
        var leaseBreakReason: String?
        /// Users whose identities the store forgets (see `SessionChange.forgottenIdentities`).
        var forgottenIdentities: Set<String> = []
        /// Users whose refresh this change completes: their in-flight flag ends in the same publication as their new
        /// tokens, so that whoever is told `token_refreshed` reads a refresh that is over, never `refreshing`.
        var refreshesCompleted: Set<String> = []

        /// Once applied: the generation and the active user after the change, and the version of each user it
        /// touched from before it (nil: the user did not exist).
        var generation: Int64 = 0
        var generationBefore: Int64 = 0
        var seatsAfter = SeatAssignments()
        var seatsBefore = SeatAssignments()
        var previous: [String: User?] = [:]
        /// Once published: each saved user as clients see it, as committed.
        var infos: [String: UserInfo] = [:]

        var writesSomething: Bool {
            self.changesGeneration || !self.saved.isEmpty || !self.deleted.isEmpty || !self.pendingWrites.isEmpty
                || !self.forgottenIdentities.isEmpty
        }
    }

    /// A change waiting for its batch.
    final class PendingChange {
        let compute: (inout Draft) throws -> Void
        var outcome: Result<Draft, any Error>?
        var waiter: CheckedContinuation<Void, Never>?

        init(_ compute: @escaping (inout Draft) throws -> Void) {
            self.compute = compute
        }

        func wake() {
            self.waiter?.resume()
            self.waiter = nil
        }
    }

    /// How many changes wait for the batch being committed (for tests and `status`).
    package var queuedChanges: Int { self.queue.count }

    private final class ValueBox<Value> {
        var value: Value?
    }

    /// Runs one change: `body` fills a draft from the working state; the change is answered once it is committed,
    /// applied and announced. Changes are computed in arrival order.
    @discardableResult
    func mutate<T: Sendable>(_ body: @escaping (inout Draft) throws -> T) async throws -> (T, Draft) {
        try self.requireRunningOrDraining()
        // A change whose requester went away (its connection closed, cancelling its task) is not made. Once queued,
        // it is committed whatever happens to the requester.
        try Task.checkCancellation()
        let box = ValueBox<T>()
        let change = PendingChange { draft in box.value = try body(&draft) }
        self.queue.append(change)
        var leading = true
        if self.committing {
            await withCheckedContinuation { change.waiter = $0 }
            // Woken either because the change is done, or to lead.
            leading = change.outcome == nil
        } else {
            self.committing = true
        }
        if leading {
            while change.outcome == nil { await self.commitBatch(self.takeQueue()) }
            if let next = self.queue.first {
                next.wake()
            } else {
                self.committing = false
            }
        }
        // The outcome is set before the change's waiter is woken, or by this task as leader.
        let draft = try (change.outcome ?? .failure(SessionError.stopping)).get()
        guard let value = box.value else { throw SessionError.stopping }
        return (value, draft)
    }

    private func requireRunningOrDraining() throws(SessionError) {
        if self.lifecycle == .loading { throw .notReady }
    }

    private func takeQueue() -> [PendingChange] {
        defer { self.queue.removeAll(keepingCapacity: true) }
        return self.queue
    }

    /// Computes, commits and publishes one batch; on a failed commit, rolls back and commits each change alone.
    private func commitBatch(_ batch: [PendingChange]) async {
        var applied: [(change: PendingChange, draft: Draft)] = []
        var failed: [(change: PendingChange, error: any Error)] = []
        for change in batch {
            var draft = Draft()
            do {
                try change.compute(&draft)
            } catch {
                failed.append((change, error))
                continue
            }
            self.apply(&draft)
            applied.append((change, draft))
        }
        let merged = Self.merge(applied.map(\.draft))
        if var merged {
            // Seats restored from a database from before seats ride along with the first commit.
            merged.seats.merge(self.unrecordedSeats) { fromChange, _ in fromChange }
            do {
                // Suspension: new changes queue up for the next batch; reads see the published state.
                try await self.store.commit(merged)
                self.unrecordedSeats = [:]
            } catch {
                for (_, draft) in applied.reversed() { self.rollBack(draft) }
                if batch.count == 1 {
                    batch[0].outcome = .failure(error)
                    return
                }
                for change in batch {
                    change.outcome = nil
                    await self.commitBatch([change])
                    change.wake()
                }
                return
            }
        }
        for index in applied.indices {
            self.publish(&applied[index].draft)
            applied[index].change.outcome = .success(applied[index].draft)
        }
        for (change, error) in failed { change.outcome = .failure(error) }
        for change in batch { change.wake() }
    }

    /// Applies a draft to the working state, recording what it replaces.
    private func apply(_ draft: inout Draft) {
        let newGeneration = draft.changesGeneration ? self.state.generation + 1 : nil
        if let newGeneration, let newlyActive = draft.newlyActive {
            draft.saved[newlyActive]?.activeGeneration = newGeneration
        }
        draft.seatsBefore = self.state.seats
        draft.generationBefore = self.state.generation
        draft.generation = self.state.generation
        guard draft.writesSomething else {
            draft.seatsAfter = self.state.seats
            return
        }
        // The seats whose active user this change touches: each may need a successor once it is applied.
        var touched: Set<String> = []
        for id in draft.deleted {
            if let seat = self.state.seats.seat(of: id) { touched.insert(seat) }
        }
        for id in draft.saved.keys {
            if let seat = self.state.seats.seat(of: id) { touched.insert(seat) }
        }
        for id in draft.deleted { draft.previous[id] = .some(self.state.remove(id)) }
        var takesIdentities = !draft.forgottenIdentities.isEmpty
        for (id, user) in draft.saved {
            if draft.previous[id] == nil { draft.previous[id] = .some(self.state[id]) }
            if !takesIdentities, let before = self.state[id], !before.hasSameIdentities(as: user) {
                takesIdentities = before.identities.contains { old in !user.has(old) }
            }
            self.state.put(user)
        }
        // An identity lost its owner: a login or link that looked its owner up before this change looks again
        // (`resolveOwner`).
        if takesIdentities { self.identityGates.identitiesTaken() }
        if let newGeneration { self.state.generation = newGeneration }
        if let newlyActive = draft.newlyActive {
            self.state.seats.set(newlyActive, on: draft.newlyActiveSeat ?? self.state.defaultSeat)
        }
        for seat in draft.vacatedSeats { self.state.seats.set(nil, on: seat) }
        // Successor rule, per seat: a seat whose active user left (logged out, removed, moved away) goes to the most
        // recently active logged-in user who is not active on another seat. A seat that follows logind shows whom the
        // desktop shows, or nobody: never a successor.
        for seat in touched.sorted() {
            if let user = self.state.seats.user(on: seat), self.state[user]?.state == .loggedIn { continue }
            self.state.seats.set(nil, on: seat)
            if self.seatConfiguration.follow == .logind { continue }
            self.state.seats.set(self.state.successor(), on: seat)
        }
        draft.generation = self.state.generation
        draft.seatsAfter = self.state.seats
    }

    /// Undoes `apply` (drafts are rolled back newest first).
    private func rollBack(_ draft: Draft) {
        guard draft.writesSomething else { return }
        for (id, previous) in draft.previous {
            if let previous { self.state.put(previous) } else { self.state.remove(id) }
        }
        self.state.generation = draft.generationBefore
        self.state.seats = draft.seatsBefore
    }

    /// The batch as one durable change: each user's last version, and the pending writes in order.
    private static func merge(_ drafts: [Draft]) -> SessionChange? {
        let writing = drafts.filter(\.writesSomething)
        guard !writing.isEmpty else { return nil }
        var final: [String: User?] = [:]
        var committed: [String: User?] = [:]
        var generation: Int64?
        var pendingWrites: [any PendingWrite] = []
        var seats: [String: String?] = [:]
        var forgotten: Set<String> = []
        for draft in writing {
            forgotten.formUnion(draft.forgottenIdentities)
            for (seat, _, to) in Self.seatChanges(from: draft.seatsBefore, to: draft.seatsAfter) {
                seats[seat] = .some(to)
            }
            for (id, previous) in draft.previous where committed[id] == nil { committed[id] = .some(previous) }
            for id in draft.deleted { final[id] = .some(nil) }
            for (id, user) in draft.saved { final[id] = user }
            if draft.changesGeneration { generation = draft.generation }
            pendingWrites += draft.pendingWrites
        }
        var saved: [User] = []
        var deleted: [String] = []
        for (id, user) in final {
            if let user { saved.append(user) } else { deleted.append(id) }
        }
        var previous: [String: User] = [:]
        for (id, user) in committed {
            if let user { previous[id] = user }
        }
        var change = SessionChange(
            generation: generation,
            saved: saved,
            deleted: deleted,
            pendingWrites: pendingWrites,
            previous: previous
        )
        change.seats = seats
        change.forgottenIdentities = forgotten
        return change
    }

    /// After the commit: publishes the change to readers, resets and schedules refreshes, announces it.
    private func publish(_ draft: inout Draft) {
        guard draft.writesSomething else { return }
        self.view.publish(
            saved: draft.saved.values,
            deleted: draft.deleted,
            generation: draft.generation,
            seats: draft.seatsAfter
        )
        for id in draft.deleted {
            self.tokenStatus.removeValue(forKey: id)
            self.scheduler.cancel(id)
            self.dropNarrowedTokens(of: id)
        }
        for (id, user) in draft.saved {
            // Narrowed tokens belong to the session they were made from: a logout, a revocation or another login
            // ends them.
            if let previous = draft.previous[id] ?? nil,
                user.state != .loggedIn || previous.subject != user.subject || previous.provider != user.provider
            {
                self.dropNarrowedTokens(of: id)
            }
            if user.state == .loggedIn {
                if (draft.previous[id] ?? nil)?.tokens != user.tokens {
                    // New tokens (a login, or a refresh, rotating or not) start with a clean refresh state: a pending
                    // retry belonged to the old ones. Only the in-flight flag carries over, unless this is the
                    // refresh that was in flight.
                    let refreshing = !draft.refreshesCompleted.contains(id) && self.tokenStatus[id]?.refreshing == true
                    self.tokenStatus[id] = TokenStatus(refreshing: refreshing)
                }
                self.scheduleTimer(for: user)
            } else {
                self.tokenStatus.removeValue(forKey: id)
                self.scheduler.cancel(id)
            }
        }
        var events = draft.events.map { Event(generation: draft.generation, $0) }
        for (seat, from, to) in Self.seatChanges(from: draft.seatsBefore, to: draft.seatsAfter) {
            // Switched away from, and active nowhere else: its narrowed tokens end with its turn.
            if let from, draft.seatsAfter.seat(of: from) == nil { self.dropNarrowedTokens(of: from) }
            // A one-seat device's events read as they always did.
            let named = self.seatConfiguration.namesSeats ? seat : nil
            events.append(
                Event(generation: draft.generation, seat: named, .activeUserChanged(previousUserID: from, userID: to))
            )
        }
        self.events.publish(events)
        if let reason = draft.leaseBreakReason { self.breakLeases(draft: draft, reason: reason) }
        for id in draft.saved.keys { draft.infos[id] = self.view.info(id) }
    }
}

extension SessionRegistry {
    /// The seats whose active user differs between two assignments, by name.
    static func seatChanges(
        from before: SeatAssignments,
        to after: SeatAssignments
    ) -> [(seat: String, from: String?, to: String?)] {
        guard before != after else { return [] }
        let names = Set(before.all.keys).union(after.all.keys).sorted()
        return names.compactMap { seat in
            let from = before.user(on: seat)
            let to = after.user(on: seat)
            return from == to ? nil : (seat, from, to)
        }
    }
}
