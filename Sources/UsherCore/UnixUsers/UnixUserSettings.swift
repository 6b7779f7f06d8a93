/// `[unix_users]`: the Unix accounts usher's users get (systemd's `io.systemd.UserDatabase`, `docs/unix-users.md`).
package struct UnixUserSettings: Sendable, Hashable {
    /// The uids new users get, in order; a range nothing else on the device allocates from.
    package var uidRange: ClosedRange<UInt32> = 60_000...60_999
    package var shell = "/bin/bash"
    /// The home directory: `%u` is the user name, `%U` the uid, `%%` a `%`.
    package var homeTemplate = "/home/%u"
    /// Supplementary groups every such user is a member of (by name; `GetMemberships`).
    package var groups: [String] = []

    package init() {}

    /// The home directory of the user `name` with `uid`.
    package func home(name: String, uid: UInt32) -> String {
        var home = ""
        var escaped = false
        for character in self.homeTemplate {
            if escaped {
                switch character {
                case "u": home += name
                case "U": home += String(uid)
                default: home.append(character)
                }
                escaped = false
            } else if character == "%" {
                escaped = true
            } else {
                home.append(character)
            }
        }
        return home
    }
}

/// One user's Unix account: its uid (also its private group's gid) and name, kept for good once given, even when the
/// user is removed from the device (the uid and name stay reserved for it).
package struct UnixUserAllocation: Sendable, Hashable {
    package var userID: String
    package var uid: UInt32
    package var name: String

    package init(userID: String, uid: UInt32, name: String) {
        self.userID = userID
        self.uid = uid
        self.name = name
    }
}

/// Names and ids the device's own account files (`/etc/passwd`, `/etc/group`) already use: usher never gives them
/// out, whatever its range says.
package struct LocalAccountNames: Sendable {
    package var names: Set<String>
    package var ids: Set<UInt32>

    package init(names: Set<String> = [], ids: Set<UInt32> = []) {
        self.names = names
        self.ids = ids
    }
}

/// What one user's records say (`io.systemd.UserDatabase`): the server encodes it (`UserDatabaseRecords`).
package struct UnixUserRecord: Sendable, Hashable {
    package var allocation: UnixUserAllocation
    package var realName: String?
    package var email: String?
    package var homeDirectory: String
    package var shell: String
    package var memberOf: [String]
}
