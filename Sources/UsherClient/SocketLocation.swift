#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where the daemon's socket is, and how that was decided.
///
/// The order, first match wins: an explicit path (`--socket`), `$USHER_SOCKET`, for users other than root
/// `$XDG_RUNTIME_DIR/usher/usher.sock` when that file exists (a per-user daemon), and the system daemon's
/// `/run/usher/usher.sock`. Every path looked at is kept in `considered`, so that an error can say what was tried.
public struct SocketLocation: Sendable, Hashable, CustomStringConvertible {
    /// Where a candidate path came from.
    public enum Source: String, Sendable, Hashable, CustomStringConvertible {
        /// Given by the caller (the CLI's `--socket`).
        case explicit
        /// `$USHER_SOCKET`.
        case environment
        /// `$XDG_RUNTIME_DIR/usher/usher.sock`: a daemon run by the user.
        case runtimeDirectory
        /// `/run/usher/usher.sock`: the system daemon.
        case system

        public var description: String {
            switch self {
            case .explicit: "explicit path"
            case .environment: "USHER_SOCKET"
            case .runtimeDirectory: "XDG_RUNTIME_DIR"
            case .system: "system default"
            }
        }
    }

    /// One path the resolution looked at.
    public struct Candidate: Sendable, Hashable {
        public var path: String
        public var source: Source
        /// Why this path was passed over; nil for the chosen one.
        public var skipReason: String?

        public init(path: String, source: Source, skipReason: String? = nil) {
            self.path = path
            self.source = source
            self.skipReason = skipReason
        }
    }

    /// The system daemon's socket.
    public static let systemPath = "/run/usher/usher.sock"

    /// The chosen path.
    public var path: String
    /// Where the chosen path came from.
    public var source: Source
    /// Every path looked at, in order; the last one is `path`.
    public var considered: [Candidate]

    /// A location that was not resolved but given as it is.
    public init(path: String, source: Source = .explicit) {
        self.path = path
        self.source = source
        self.considered = [Candidate(path: path, source: source)]
    }

    public var description: String { self.path }

    /// Resolves the socket path.
    ///
    /// Nothing is read that the answer does not need: `$XDG_RUNTIME_DIR` and the file system are looked at only when
    /// there is no explicit path and no `$USHER_SOCKET`. This runs before every CLI command, so it stays a couple of
    /// `getenv` calls rather than a copy of the whole environment.
    ///
    /// - Parameters:
    ///   - explicitPath: a path the user gave; used as it is when not nil or empty.
    ///   - environment: the environment to read `USHER_SOCKET` and `XDG_RUNTIME_DIR` from; nil (the default) reads
    ///     those two variables of the process's environment, and no others.
    ///   - isRoot: whether to skip the per-user location; true for uid 0 by default.
    ///   - fileExists: tells whether a path exists; the file system by default.
    public static func resolve(
        explicitPath: String? = nil,
        environment: [String: String]? = nil,
        isRoot: Bool = getuid() == 0,
        fileExists: (String) -> Bool = { path in
            // `stat` follows symbolic links, as `FileManager.fileExists(atPath:)` does.
            var status = stat()
            return stat(path, &status) == 0
        }
    ) -> SocketLocation {
        func variable(_ name: String) -> String? {
            if let environment { return environment[name] }
            return getenv(name).map { String(cString: $0) }
        }
        if let explicitPath, !explicitPath.isEmpty {
            return SocketLocation(path: explicitPath, source: .explicit)
        }
        if let path = variable("USHER_SOCKET"), !path.isEmpty {
            return SocketLocation(path: path, source: .environment)
        }
        var considered: [Candidate] = []
        if !isRoot, let runtimeDirectory = variable("XDG_RUNTIME_DIR"), !runtimeDirectory.isEmpty {
            let directory = runtimeDirectory.hasSuffix("/") ? String(runtimeDirectory.dropLast()) : runtimeDirectory
            let path = directory + "/usher/usher.sock"
            if fileExists(path) {
                considered.append(Candidate(path: path, source: .runtimeDirectory))
                return SocketLocation(path: path, source: .runtimeDirectory, considered: considered)
            }
            considered.append(Candidate(path: path, source: .runtimeDirectory, skipReason: "not found"))
        }
        considered.append(Candidate(path: Self.systemPath, source: .system))
        return SocketLocation(path: Self.systemPath, source: .system, considered: considered)
    }

    private init(path: String, source: Source, considered: [Candidate]) {
        self.path = path
        self.source = source
        self.considered = considered
    }
}
