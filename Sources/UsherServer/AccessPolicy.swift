import UsherProtocol

/// What a peer may do. Every method needs one permission, except `hello`, which is always allowed.
package enum Permission: String, Sendable, Hashable, CaseIterable, Comparable {
    /// `providers`, `current_user`, `list_users`, `subscribe`, `status`, `jwks`.
    case read
    /// `access_token`, `refresh`.
    case token
    /// Everything that changes state.
    case manage

    package static func < (lhs: Permission, rhs: Permission) -> Bool {
        Self.allCases.firstIndex(of: lhs)! < Self.allCases.firstIndex(of: rhs)!
    }

    /// The permission a method needs; nil for `hello`.
    package static func required(for method: UsherProtocol.Method) -> Permission? {
        switch method {
        case .hello: nil
        case .providers, .currentUser, .listUsers, .subscribe, .status, .jwks: .read
        case .accessToken, .refresh: .token
        case .register, .login, .switchUser, .logout, .removeUser, .createAPIKey, .listAPIKeys, .deleteAPIKey: .manage
        }
    }
}

/// The credentials the kernel reports for the process at the other end of a connection (`SO_PEERCRED`).
package struct PeerCredentials: Sendable, Hashable {
    package var uid: UInt32
    package var gid: UInt32
    package var pid: Int32

    package init(uid: UInt32, gid: UInt32, pid: Int32) {
        self.uid = uid
        self.gid = gid
        self.pid = pid
    }
}

/// Decides what a peer may do from its credentials.
///
/// The daemon's own uid and root may do everything; anyone else may only say `hello`.
package struct AccessPolicy: Sendable {
    package var daemonUID: UInt32

    package init(daemonUID: UInt32) {
        self.daemonUID = daemonUID
    }

    package func permissions(for peer: PeerCredentials) -> Set<Permission> {
        if peer.uid == 0 || peer.uid == self.daemonUID { return Set(Permission.allCases) }
        return []
    }
}
