import Logging
import UsherCore
import UsherServer

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension Daemon {
    /// Refuses a `uid_range` that reaches into this device's system range, when its login.defs ends the system range
    /// above 999 (`SYS_UID_MAX`): useradd would one day give one of usher's uids to a system account.
    func checkUIDRangeAgainstLoginDefs(path: String = "/etc/login.defs") throws(ConfigurationError) {
        guard self.configuration.unixUsers.enabled,
            let text = try? String(contentsOfFile: path, encoding: .utf8),
            let maximum = UnixUsersConfiguration.systemAccountMaximum(loginDefs: text)
        else { return }
        let range = self.configuration.unixUsers.settings.uidRange
        if range.lowerBound <= maximum {
            throw ConfigurationError(
                file: self.configurationPath ?? "(defaults)",
                key: "unix_users.uid_range",
                message: "overlaps the system range (0-\(maximum), SYS_UID_MAX in \(path))"
            )
        }
    }

    /// Binds the user database socket (`io.systemd.UserDatabase`, `[unix_users]`): handed over by systemd as the
    /// descriptor named `userdb` (`usherd-userdb.socket`), else at `[unix_users] socket` or its default. Mode 0666:
    /// every process's NSS lookups (`nss-systemd`) connect to it, as to every socket in `/run/systemd/userdb`. With
    /// `[unix_users]` off, a socket that systemd hands over anyway answers `ServiceNotAvailable`.
    func bindUserDatabaseSocket(
        directory: UnixUserDirectory?,
        dispatcher: Dispatcher,
        tracker: ConnectionTracker
    ) async throws -> (SocketServer, UserDatabaseInterface)? {
        let address: ListenAddress
        if let descriptor = Systemd.listeningDescriptor(exactlyNamed: "userdb") {
            address = .inherited(descriptor: descriptor, path: Systemd.boundPath(of: descriptor))
        } else if directory != nil {
            let path = self.configuration.unixUsers.resolvedSocketPath(
                socketPath: self.socketPath,
                environment: ProcessInfo.processInfo.environment
            )
            Self.createUserdbDirectory(for: path)
            address = .path(path, mode: 0o666)
        } else {
            return nil
        }
        // The service name clients give is the socket's file name, as systemd's clients derive it.
        let service = address.displayPath.split(separator: "/").last.map(String.init) ?? UnixUserDirectory.serviceName
        let served =
            directory
            ?? UnixUserDirectory(
                settings: self.configuration.unixUsers.settings,
                localAccounts: { LocalAccountNames() },
                encode: UserDatabaseRecords.encode,
                logger: self.logger
            )
        if directory != nil, self.configuration.unixUsers.settings.uidRange.overlaps(Self.homedRange),
            access("\(UnixUsersConfiguration.userdbDirectory)/io.systemd.Home", F_OK) == 0
        {
            self.logger.warning(
                "unix_users.uid_range overlaps systemd-homed's uids (60001-60513), and systemd-homed runs: choose another range"
            )
        }
        let interface = UserDatabaseInterface(directory: served, service: service)
        if directory == nil { interface.setAvailable(false) }
        let server = try await SocketServer.bind(
            address,
            wire: .userDatabase(interface),
            dispatcher: dispatcher,
            tracker: tracker,
            logger: self.logger
        )
        let activation = if case .inherited = address { " (socket activation)" } else { "" }
        self.logger.info(
            "user database io.systemd.UserDatabase listening\(activation)",
            metadata: ["socket": "\(address.displayPath)", "service": "\(service)", "enabled": "\(directory != nil)"]
        )
        return (server, interface)
    }

    /// The uids systemd-homed gives its users (systemd's `UIDS-GIDS.md`).
    static let homedRange: ClosedRange<UInt32> = 60_001...60_513

    /// `/run/systemd/userdb` exists wherever systemd-userdbd runs; where it does not (Debian ships userdbd apart),
    /// usherd makes it, as systemd would (root's, 0755), so that `nss-systemd` finds the socket there.
    private static func createUserdbDirectory(for path: String) {
        guard path.hasPrefix(UnixUsersConfiguration.userdbDirectory + "/") else { return }
        _ = mkdir("/run/systemd", 0o755)
        _ = mkdir(UnixUsersConfiguration.userdbDirectory, 0o755)
    }
}

/// The device's own account files, read directly (not through NSS, which would ask usherd itself through
/// `nss-systemd`): the names and ids usher must never give out.
enum LocalAccountFiles {
    static func read(passwd: String = "/etc/passwd", group: String = "/etc/group") -> LocalAccountNames {
        var names = LocalAccountNames()
        for path in [passwd, group] {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { continue }
            for line in text.split(whereSeparator: \.isNewline) {
                let fields = line.split(separator: ":", omittingEmptySubsequences: false)
                guard fields.count >= 3, !fields[0].isEmpty, !fields[0].hasPrefix("#") else { continue }
                names.names.insert(String(fields[0]))
                if let id = UInt32(fields[2]) { names.ids.insert(id) }
            }
        }
        return names
    }
}
