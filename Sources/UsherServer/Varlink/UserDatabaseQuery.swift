import UsherCore
import UsherProtocol

/// The parameters of one `io.systemd.UserDatabase` call: the primary keys (a name, an id), the secondary filters
/// (`fuzzyNames`, `dispositionMask`, a range of ids) and `service`. A parameter the method does not take, or of the
/// wrong type, is `org.varlink.service.InvalidParameter` naming it, as systemd's own services answer.
struct UserDatabaseQuery {
    enum Kind {
        case user, group, memberships
    }

    struct InvalidParameter: Error {
        var parameter: String
    }

    var kind: Kind
    /// `uid` or `gid`.
    var id: Int64?
    /// `userName` (or, for a group, `groupName`).
    var name: String?
    /// `GetMemberships`'s `groupName`.
    var groupName: String?
    var fuzzyNames: [String]?
    var dispositionMask: [String]?
    var minimum: Int64?
    var maximum: Int64?
    /// Nil when the call gave none (`BadService`).
    var service: String?

    private static let keys: [Kind: Set<String>] = [
        .user: ["uid", "userName", "fuzzyNames", "dispositionMask", "uidMin", "uidMax", "service"],
        .group: ["gid", "groupName", "fuzzyNames", "dispositionMask", "gidMin", "gidMax", "service"],
        .memberships: ["userName", "groupName", "service"],
    ]

    init(_ kind: Kind, _ params: Params) throws(InvalidParameter) {
        self.kind = kind
        let allowed = Self.keys[kind, default: []]
        if !params.values.keys.allSatisfy(allowed.contains) {
            // The first unknown by name, so that the answer does not depend on a dictionary's order.
            throw InvalidParameter(parameter: params.values.keys.sorted().first { !allowed.contains($0) } ?? "")
        }
        let ids: ClosedRange<Int64> = 0...Int64(UInt32.max)
        let decoder = ParamsDecoder(params)
        do {
            self.service = try decoder.optionalString("service")
            switch kind {
            case .user, .group:
                let (idKey, nameKey, prefix) = kind == .user ? ("uid", "userName", "uid") : ("gid", "groupName", "gid")
                self.id = try decoder.optionalInt(idKey, in: ids)
                self.name = try decoder.optionalString(nameKey)
                self.fuzzyNames = try decoder.optionalStringArray("fuzzyNames")
                self.dispositionMask = try decoder.optionalStringArray("dispositionMask")
                self.minimum = try decoder.optionalInt(prefix + "Min", in: ids)
                self.maximum = try decoder.optionalInt(prefix + "Max", in: ids)
            case .memberships:
                self.name = try decoder.optionalString("userName")
                self.groupName = try decoder.optionalString("groupName")
            }
        } catch {
            // `ParamsDecoder` names the parameter at fault.
            throw InvalidParameter(parameter: error.parameter ?? "")
        }
    }

    /// Whether a user's record (or its private group's) passes the secondary filters.
    func matchesFilters(_ entry: UnixUserDirectory.Entry) -> Bool {
        let id = Int64(entry.allocation.uid)
        if let minimum, id < minimum { return false }
        if let maximum, id > maximum { return false }
        // Every record usher serves is a person's: `regular`.
        if let dispositionMask, !dispositionMask.contains("regular") { return false }
        if let fuzzyNames {
            // As systemd's own services do it, loosely: a name given is found, case aside, within the user name, the
            // real name or the email address.
            let fields = [entry.allocation.name, entry.realName, entry.email].compactMap { $0?.lowercased() }
            let found = fuzzyNames.contains { fuzzy in
                let wanted = fuzzy.lowercased()
                return !wanted.isEmpty && fields.contains { $0.contains(wanted) }
            }
            if !found { return false }
        }
        return true
    }
}
