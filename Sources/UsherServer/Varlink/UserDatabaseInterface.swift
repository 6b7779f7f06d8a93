import Synchronization
import UsherCore
import UsherProtocol

/// systemd's `io.systemd.UserDatabase` (docs/USER_GROUP_API.md in systemd's repository), served from the Unix user
/// directory on its own socket: `GetUserRecord`, `GetGroupRecord` (each user's private group, gid = uid) and
/// `GetMemberships` (`[unix_users] groups`).
///
/// Every call is answered on the event loop from the directory's index: a lookup by name or id is one dictionary
/// lookup and the record was encoded when the user last changed, so a call costs the same whatever the number of
/// users. Enumerations (`more`) write every matching record, each its own reply.
package final class UserDatabaseInterface: Sendable {
    static let name = "io.systemd.UserDatabase"

    static let noRecordFound = "io.systemd.UserDatabase.NoRecordFound"
    static let badService = "io.systemd.UserDatabase.BadService"
    static let serviceNotAvailable = "io.systemd.UserDatabase.ServiceNotAvailable"
    static let conflictingRecordFound = "io.systemd.UserDatabase.ConflictingRecordFound"
    static let nonMatchingRecordFound = "io.systemd.UserDatabase.NonMatchingRecordFound"

    /// The interface as systemd's documentation gives it.
    static let description = """
        interface io.systemd.UserDatabase

        method GetUserRecord(
          uid: ?int,
          userName: ?string,
          fuzzyNames: ?[]string,
          dispositionMask: ?[]string,
          uidMin: ?int,
          uidMax: ?int,
          service: string
        ) -> (
          record: object,
          incomplete: bool
        )

        method GetGroupRecord(
          gid: ?int,
          groupName: ?string,
          fuzzyNames: ?[]string,
          dispositionMask: ?[]string,
          gidMin: ?int,
          gidMax: ?int,
          service: string
        ) -> (
          record: object,
          incomplete: bool
        )

        method GetMemberships(
          userName: ?string,
          groupName: ?string,
          service: string
        ) -> (
          userName: string,
          groupName: string
        )

        error NoRecordFound()
        error BadService()
        error ServiceNotAvailable()
        error ConflictingRecordFound()
        error NonMatchingRecordFound()
        error EnumerationNotSupported()

        """

    let directory: UnixUserDirectory
    /// The service name calls must give: the socket's file name (`io.usher.Users`), as systemd's clients send it.
    let service: String
    /// False once a reload turned `[unix_users]` off: every call is `ServiceNotAvailable` until the restart that
    /// removes the socket.
    private let available: Mutex<Bool>

    package init(directory: UnixUserDirectory, service: String) {
        self.directory = directory
        self.service = service
        self.available = Mutex(true)
    }

    /// Stops (or resumes) answering with records.
    package func setAvailable(_ available: Bool) {
        self.available.withLock { $0 = available }
    }

    /// The interfaces of the socket, for `org.varlink.service.GetInfo`.
    static let interfaces: [(name: String, description: String)] = [
        (VarlinkService.name, VarlinkService.description),
        (UserDatabaseInterface.name, UserDatabaseInterface.description),
    ]

    /// The replies to one call (several for an enumeration), each NUL-terminated.
    func answer(_ call: VarlinkCall) -> [UInt8] {
        guard call.interface == Self.name else {
            return VarlinkReply.error(VarlinkService.interfaceNotFound, ["interface": .string(call.interface)])
        }
        let kind: UserDatabaseQuery.Kind
        switch call.member {
        case "GetUserRecord": kind = .user
        case "GetGroupRecord": kind = .group
        case "GetMemberships": kind = .memberships
        default: return VarlinkReply.error(VarlinkService.methodNotFound, ["method": .string(call.method)])
        }
        let query: UserDatabaseQuery
        do {
            query = try UserDatabaseQuery(kind, try call.decodeParameters())
        } catch let error as UserDatabaseQuery.InvalidParameter {
            return VarlinkReply.error(VarlinkService.invalidParameter, ["parameter": .string(error.parameter)])
        } catch {
            return VarlinkReply.error(VarlinkService.invalidParameter, ["parameter": "parameters"])
        }
        guard query.service == self.service else { return VarlinkReply.error(Self.badService) }
        guard self.available.withLock({ $0 }) else { return VarlinkReply.error(Self.serviceNotAvailable) }
        switch kind {
        case .user, .group: return self.records(query, more: call.more)
        case .memberships: return self.memberships(query, more: call.more)
        }
    }

    // MARK: - Records

    private func records(_ query: UserDatabaseQuery, more: Bool) -> [UInt8] {
        let group = query.kind == .group
        guard query.id != nil || query.name != nil else {
            guard more else { return VarlinkReply.error(VarlinkService.expectedMore) }
            let entries = self.directory.users().filter { query.matchesFilters($0) }
            return Self.replies(entries.map { group ? $0.group : $0.record }, wrapped: true)
        }
        let byName = query.name.flatMap { self.directory.user(named: $0) }
        let byID = query.id.flatMap { id in UInt32(exactly: id).flatMap { self.directory.user(uid: $0) } }
        let entry: UnixUserDirectory.Entry
        switch (query.name != nil, query.id != nil) {
        case (true, true):
            guard let byName, let byID else {
                return VarlinkReply.error(
                    byName == nil && byID == nil ? Self.noRecordFound : Self.conflictingRecordFound
                )
            }
            guard byName.allocation.uid == byID.allocation.uid else {
                return VarlinkReply.error(Self.conflictingRecordFound)
            }
            entry = byName
        default:
            guard let found = byName ?? byID else { return VarlinkReply.error(Self.noRecordFound) }
            entry = found
        }
        guard query.matchesFilters(entry) else { return VarlinkReply.error(Self.nonMatchingRecordFound) }
        return Self.replies([group ? entry.group : entry.record], wrapped: true)
    }

    // MARK: - Memberships

    private func memberships(_ query: UserDatabaseQuery, more: Bool) -> [UInt8] {
        let groups = self.directory.settings.groups
        if query.name == nil || query.groupName == nil, !more {
            return VarlinkReply.error(VarlinkService.expectedMore)
        }
        if let groupName = query.groupName, !groups.contains(groupName) {
            return VarlinkReply.error(Self.noRecordFound)
        }
        let users: [String]
        if let name = query.name {
            guard self.directory.user(named: name) != nil else { return VarlinkReply.error(Self.noRecordFound) }
            users = [name]
        } else {
            users = self.directory.userNames()
        }
        let wanted = query.groupName.map { [$0] } ?? groups
        var pairs: [[UInt8]] = []
        for user in users {
            for group in wanted {
                pairs.append(
                    Array(
                        LineCodec.line(
                            JSONValue.object(["userName": .string(user), "groupName": .string(group)])
                        ).dropLast()
                    )
                )
            }
        }
        return Self.replies(pairs, wrapped: false)
    }

    // MARK: - Replies

    private static let recordPrefix: [UInt8] = Array(#"{"parameters":{"incomplete":false,"record":"#.utf8)
    private static let continuingRecordPrefix: [UInt8] = Array(
        #"{"continues":true,"parameters":{"incomplete":false,"record":"#.utf8
    )
    private static let parametersPrefix: [UInt8] = Array(#"{"parameters":"#.utf8)
    private static let continuingPrefix: [UInt8] = Array(#"{"continues":true,"parameters":"#.utf8)

    /// One reply per object, every one but the last with `continues`; `NoRecordFound` when there is none.
    /// `wrapped`: each object is a record, the parameters `{"incomplete":false,"record":…}`; else the parameters.
    static func replies(_ objects: [[UInt8]], wrapped: Bool) -> [UInt8] {
        guard !objects.isEmpty else { return VarlinkReply.error(Self.noRecordFound) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(objects.reduce(0) { $0 + $1.count + 64 })
        for (index, object) in objects.enumerated() {
            let last = index == objects.count - 1
            bytes +=
                wrapped
                ? (last ? Self.recordPrefix : Self.continuingRecordPrefix)
                : (last ? Self.parametersPrefix : Self.continuingPrefix)
            bytes += object
            bytes += wrapped ? [UInt8(ascii: "}"), UInt8(ascii: "}"), 0] : [UInt8(ascii: "}"), 0]
        }
        return bytes
    }
}
