import UsherCore
import UsherProtocol

/// The JSON user and group records (systemd's `USER_RECORD.md` and `GROUP_RECORD.md`) of a Unix user of usher's, as
/// `io.systemd.UserDatabase` answers them: `UnixUserDirectory` calls `encode` once per user and change, and keeps the
/// bytes.
package enum UserDatabaseRecords {
    /// The user record and the private group's record (gid = uid), each a JSON object.
    @Sendable package static func encode(_ user: UnixUserRecord) -> (record: [UInt8], group: [UInt8]) {
        let allocation = user.allocation
        var record: [String: JSONValue] = [
            "userName": .string(allocation.name),
            "uid": .int(Int64(allocation.uid)),
            "gid": .int(Int64(allocation.uid)),
            "homeDirectory": .string(user.homeDirectory),
            "shell": .string(user.shell),
            "memberOf": .array(user.memberOf.map { .string($0) }),
            "disposition": "regular",
            "service": .string(UnixUserDirectory.serviceName),
        ]
        if let name = user.realName, !name.isEmpty { record["realName"] = .string(Self.gecosSafe(name)) }
        if let email = user.email { record["emailAddress"] = .string(email) }
        let group: [String: JSONValue] = [
            "groupName": .string(allocation.name),
            "gid": .int(Int64(allocation.uid)),
            "disposition": "regular",
            "service": .string(UnixUserDirectory.serviceName),
        ]
        return (
            Array(LineCodec.line(JSONValue.object(record)).dropLast()),
            Array(LineCodec.line(JSONValue.object(group)).dropLast())
        )
    }

    /// A real name as systemd accepts it for the GECOS field (`valid_gecos()`): no `:` and no control characters,
    /// which would break `/etc/passwd`'s format in `getent passwd`.
    static func gecosSafe(_ name: String) -> String {
        String(name.unicodeScalars.map { $0 == ":" || $0.value < 0x20 || $0.value == 0x7F ? " " : Character($0) })
    }
}
