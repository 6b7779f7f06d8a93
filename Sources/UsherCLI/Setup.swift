import ArgumentParser
import UsherClient

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension Usher {
    /// `usher setup-git`: makes usher git's credential helper, for every host or one, as `gh auth setup-git` does.
    struct SetupGit: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "setup-git",
            abstract: "Make usher git's credential helper (in your global git configuration).",
            discussion: """
                Writes credential.https://HOST.helper (HOST may end in a path, for one repository or organisation, \
                with credential.useHttpPath) as an empty value, which drops the helpers configured before it for \
                those URLs, then this usher with git-credential --host HOST: the helper answers for that host only, \
                over https (http only to a loopback address). The command recorded is the installed usher when it \
                is this program; otherwise this program's own path, with a warning when it is not on PATH (a \
                build directory's path stops working when the build changes). --user maps the host to one user of \
                the device (default: whoever is the active user of the caller's seat); --username is the user name \
                the host expects beside a token (default oauth2; GitHub and Gitea accept any, GitLab wants oauth2).
                """
        )

        @Option(
            help: "The host (and path): git.example.com or git.example.com/team (https), or a URL."
        )
        var host: String

        @Option(help: "Always this user's token for it: id or email.", completion: UserCompletion.kind)
        var user: String?

        @Option(help: "The user name git sends with the token.")
        var username: String?

        @Option(help: "Write to this git configuration file instead of the global one.")
        var file: String?

        func validate() throws {
            let url = self.url
            guard url.lowercased().hasPrefix("https://") || url.lowercased().hasPrefix("http://") else {
                throw ValidationError("--host: a host, host/path or an https:// URL")
            }
            let host = GitHost.normalized(url)
            guard !host.isEmpty else { throw ValidationError("--host: no host in \(url)") }
            guard url.lowercased().hasPrefix("https://") || GitHost.isLoopback(host) else {
                throw ValidationError(
                    "--host: usher sends tokens over https only (plain http only to a loopback address)"
                )
            }
        }

        /// The URL git's configuration is keyed by: `--host` as given, `https://` when it names no scheme.
        var url: String { self.host.contains("://") ? self.host : "https://\(self.host)" }

        func run() throws {
            let program = try ProgramPath.forOtherTools()
            var helper = "!" + Shell.quoted(program.path) + " git-credential"
            helper += " --host " + Shell.quoted(GitHost.normalized(self.url))
            if let user = self.user { helper += " --user " + Shell.quoted(user) }
            if let username = self.username { helper += " --username " + Shell.quoted(username) }
            let url = self.url
            let key = "credential.\(url).helper"
            let scope = self.file.map { ["--file", $0] } ?? ["--global"]
            try Spawn.run(["git", "config"] + scope + ["--replace-all", key, ""])
            try Spawn.run(["git", "config"] + scope + ["--add", key, helper])
            if url.split(separator: "/", omittingEmptySubsequences: false).count > 3 {
                try Spawn.run(["git", "config"] + scope + ["credential.\(url).useHttpPath", "true"])
            }
            if let warning = program.warning { Output.error("usher: warning: git runs \(warning)") }
            Output.line("git asks usher for credentials for \(Terminal.escaped(url)).")
        }
    }

    /// `usher setup-kube`: points a kubeconfig context at `usher kube-credential`, written into the kubeconfig by usher
    /// itself (`Kubeconfig`), not with `kubectl config set-credentials`, which panics in the kubectl Debian 12 ships.
    struct SetupKube: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "setup-kube",
            abstract: "Make usher the credential plugin of a kubectl context.",
            discussion: """
                Writes a user named usher-CONTEXT, whose exec stanza runs usher kube-credential, into the \
                kubeconfig, and makes it the user of the context; everything else in the file (other users, \
                contexts, clusters, preferences, extensions) stays as it was, comments aside. The kubeconfig is \
                --kubeconfig, else the file of KUBECONFIG that defines the context, else ~/.kube/config. It needs \
                no kubectl, and works with any (Debian 12's 1.20 included). The command recorded is the installed \
                usher when it is this program, as for setup-git.
                """
        )

        @Option(help: "The kubeconfig context.")
        var context: String

        @Option(help: "Always this user's token for it: id or email.", completion: UserCompletion.kind)
        var user: String?

        @Option(help: "How long the token must stay valid at least (as usher token --min-valid).")
        var minValid: String?

        @Option(help: "The kubeconfig file (default: the one of KUBECONFIG that has the context, or ~/.kube/config).")
        var kubeconfig: String?

        @Option(help: "The ExecCredential API version.")
        var apiVersion = "client.authentication.k8s.io/v1beta1"

        func validate() throws {
            guard KubeCredential.apiVersions.contains(self.apiVersion) else {
                throw ValidationError("--api-version: " + KubeCredential.apiVersions.joined(separator: " or "))
            }
        }

        func run() throws {
            let name = "usher-\(self.context)"
            let program = try ProgramPath.forOtherTools()
            var arguments = ["kube-credential"]
            if let user = self.user { arguments += ["--user", user] }
            if let minValid = self.minValid { arguments += ["--min-valid", minValid] }
            // What kubectl config set-credentials writes, with interactiveMode Never: usher never reads kubectl's
            // terminal (kubectl 1.20 ignores the key; later ones need it for the v1 API).
            let exec = Kubeconfig.Node.mapping([
                .init(key: "apiVersion", value: Kubeconfig.string(self.apiVersion)),
                .init(key: "args", value: .sequence(arguments.map(Kubeconfig.string))),
                .init(key: "command", value: Kubeconfig.string(program.path)),
                .init(key: "env", value: .null),
                .init(key: "interactiveMode", value: .scalar("Never")),
                .init(key: "provideClusterInfo", value: .scalar("false")),
            ])
            let (path, text) = try self.file()
            do {
                var config = try Kubeconfig(parsing: text)
                try config.setExecUser(name, exec: exec, forContext: self.context)
                try TextFile.replace(path, with: config.text)
            } catch let problem as Kubeconfig.Problem {
                throw CLIError("cannot set up \(Terminal.escaped(path)): \(Terminal.escaped(problem.description))")
            }
            if let warning = program.warning { Output.error("usher: warning: kubectl runs \(warning)") }
            Output.line("kubectl context \(Terminal.escaped(self.context)) gets its token from usher.")
        }

        /// The kubeconfig to change and its text: --kubeconfig; else the first file of `KUBECONFIG` (a list, as
        /// kubectl reads it) that defines the context; else `~/.kube/config`.
        func file() throws -> (path: String, text: String) {
            if let path = self.kubeconfig { return (path, try TextFile.read(path) ?? "") }
            let list = getenv("KUBECONFIG").map { String(cString: $0) } ?? ""
            let paths = list.split(separator: ":").map(String.init).filter { !$0.isEmpty }
            if !paths.isEmpty {
                for path in paths {
                    guard let text = try TextFile.read(path) else { continue }
                    if (try? Kubeconfig(parsing: text).hasContext(self.context)) == true { return (path, text) }
                }
                throw CLIError(
                    "no file of KUBECONFIG (\(Terminal.escaped(list))) defines the context "
                        + "\(Terminal.escaped(self.context)) (kubectl config get-contexts lists them)"
                )
            }
            guard let home = getenv("HOME").map({ String(cString: $0) }), !home.isEmpty else {
                throw CLIError("no kubeconfig: set --kubeconfig, KUBECONFIG or HOME")
            }
            let path = home + "/.kube/config"
            return (path, try TextFile.read(path) ?? "")
        }
    }
}

/// Whole text files, for the kubeconfig: read at once, replaced atomically.
enum TextFile {
    /// The file's text; nil when it does not exist. At most 16 MiB: a kubeconfig is a few kilobytes.
    static func read(_ path: String) throws -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            if errno == ENOENT { return nil }
            throw CLIError("cannot read \(Terminal.escaped(path)): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = Glibc.read(descriptor, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else {
                throw CLIError("cannot read \(Terminal.escaped(path)): \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }
            bytes += buffer[0..<count]
            guard bytes.count <= 16 << 20 else { throw CLIError("\(Terminal.escaped(path)) is larger than 16 MiB") }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Replaces the file (the one a symbolic link points to) with `text`: a new file beside it with the old one's
    /// mode (0600 for a new one: a kubeconfig holds credentials), synced, then renamed over it, so that a reader
    /// never sees half a file.
    static func replace(_ path: String, with text: String) throws {
        var target = path
        if let resolved = realpath(path, nil) {
            target = String(cString: resolved)
            free(resolved)
        }
        var mode: mode_t = 0o600
        var status = stat()
        if stat(target, &status) == 0 { mode = status.st_mode & 0o7777 }
        let directory = target.split(separator: "/", omittingEmptySubsequences: false).dropLast()
            .joined(separator: "/")
        if !directory.isEmpty, access(directory, F_OK) != 0 { mkdir(directory, 0o700) }
        let temporary = "\(target).usher-\(getpid())"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard descriptor >= 0 else {
            throw CLIError("cannot write \(Terminal.escaped(temporary)): \(String(cString: strerror(errno)))")
        }
        fchmod(descriptor, mode)
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else {
                let reason = String(cString: strerror(errno))
                close(descriptor)
                unlink(temporary)
                throw CLIError("cannot write \(Terminal.escaped(temporary)): \(reason)")
            }
            bytes = bytes.dropFirst(written)
        }
        let synced = fsync(descriptor) == 0
        close(descriptor)
        guard synced, rename(temporary, target) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw CLIError("cannot replace \(Terminal.escaped(target)): \(reason)")
        }
    }
}

/// Running another program and waiting for it: `posix_spawnp`, not Foundation's `Process` (see Output).
enum Spawn {
    static func run(_ arguments: [String]) throws {
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var pid = pid_t()
        let started = CoreDumps.restored { posix_spawnp(&pid, arguments[0], nil, nil, argv, environ) }
        guard started == 0 else {
            throw CLIError("cannot run \(arguments[0]): \(String(cString: strerror(started)))")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw CLIError("lost \(arguments[0]): \(String(cString: strerror(errno)))") }
        }
        // WIFEXITED and WEXITSTATUS, which Swift does not import.
        guard status & 0x7F == 0, (status >> 8) & 0xFF == 0 else {
            throw CLIError("\(arguments.prefix(3).joined(separator: " ")) failed")
        }
    }

    /// Runs `arguments` with stdin from /dev/null and returns what it printed on stdout (at most `limit` bytes; more
    /// is left unread); nil when it exits non-zero. Its stderr is the caller's.
    static func output(_ arguments: [String], limit: Int) throws -> String? {
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else {
            throw CLIError("cannot run \(arguments[0]): \(String(cString: strerror(errno)))")
        }
        // Neither end may stay open in another program this one starts (the child gets the write end as its stdout).
        for end in pipeEnds { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var pid = pid_t()
        let started = CoreDumps.restored { posix_spawnp(&pid, arguments[0], &actions, nil, argv, environ) }
        close(pipeEnds[1])
        guard started == 0 else {
            close(pipeEnds[0])
            throw CLIError("cannot run \(arguments[0]): \(String(cString: strerror(started)))")
        }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count < limit {
            let count = read(pipeEnds[0], &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += buffer[0..<count]
        }
        // A child still writing past the limit gets EPIPE or SIGPIPE once the pipe is closed; it is waited for below.
        close(pipeEnds[0])
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw CLIError("lost \(arguments[0]): \(String(cString: strerror(errno)))") }
        }
        guard status & 0x7F == 0, (status >> 8) & 0xFF == 0 else { return nil }
        return String(decoding: bytes.prefix(limit), as: UTF8.self)
    }
}

/// Quoting for the shell git runs `!`-helpers with.
enum Shell {
    static func quoted(_ text: String) -> String {
        guard text.contains(where: { !($0.isLetter || $0.isNumber || "-_./@:=+".contains($0)) }) else { return text }
        return "'" + text.replacing("'", with: "'\\''") + "'"
    }
}

/// The path other programs (git, kubectl) are to run this CLI by, which must go on working and must run the CLI.
enum ProgramPath {
    /// The path, and why it may not last (nil when it is the installed `usher`).
    struct Choice {
        var path: String
        var warning: String?
    }

    /// The first `usher` on `PATH` when it is this program (the same file, or a copy of it byte for byte): the
    /// installed one, which outlives a build directory. Otherwise this program as it was run: `/proc/self/exe`, unless
    /// that is named `usherd` (one file is both programs, and `usherd` is the daemon's name), when it is the name it was
    /// run by (a symbolic link named `usher`, as busybox's applets are), which runs the CLI.
    static func forOtherTools() throws -> Choice {
        let executable = try Self.executable()
        let onPath = Self.searchPath("usher")
        if let onPath, Self.sameProgram(onPath, executable) { return Choice(path: onPath, warning: nil) }
        var path = executable
        if Self.basename(executable) == "usherd" {
            guard let invoked = Self.invokedPath(), Self.basename(invoked) != "usherd",
                Self.sameProgram(invoked, executable)
            else {
                throw CLIError(
                    "cannot record a command that runs usher's CLI: this program is \(executable), which under that "
                        + "name is the daemon; run it by a name such as usher (a link to it)"
                )
            }
            path = invoked
        }
        let why =
            onPath.map { "\($0) on PATH is another program" } ?? "no usher is on PATH"
        return Choice(
            path: path,
            warning: "\(Terminal.escaped(path)), not an installed usher (\(Terminal.escaped(why))): a build "
                + "directory's path stops working when the build changes or is removed; install usher and run this "
                + "command again"
        )
    }

    /// `/proc/self/exe`: this program's file, whatever link it was run through.
    static func executable() throws -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { throw CLIError("cannot tell where usher is installed (/proc/self/exe)") }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The path this program was run by, absolute, its last link not followed: `argv[0]` with a slash (relative to
    /// the working directory), else the first match on `PATH`.
    static func invokedPath() -> String? {
        guard let argv0 = CommandLine.arguments.first, !argv0.isEmpty else { return nil }
        guard argv0.contains("/") else { return Self.searchPath(argv0) }
        if argv0.hasPrefix("/") { return argv0 }
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getcwd(&buffer, buffer.count) != nil else { return nil }
        let directory = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return directory + "/" + (argv0.hasPrefix("./") ? String(argv0.dropFirst(2)) : argv0)
    }

    /// The first executable `name` in `PATH`'s absolute directories, as found (links not followed).
    static func searchPath(_ name: String) -> String? {
        guard let path = getenv("PATH").map({ String(cString: $0) }) else { return nil }
        for directory in path.split(separator: ":") where directory.hasPrefix("/") {
            let candidate = "\(directory)/\(name)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }

    static func basename(_ path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }

    /// Whether `a` and `b` (links followed) are one file, or two files of the same bytes.
    static func sameProgram(_ a: String, _ b: String) -> Bool {
        var first = stat()
        var second = stat()
        guard stat(a, &first) == 0, stat(b, &second) == 0 else { return false }
        if first.st_dev == second.st_dev && first.st_ino == second.st_ino { return true }
        guard first.st_size == second.st_size else { return false }
        return Self.sameBytes(a, b)
    }

    private static func sameBytes(_ a: String, _ b: String) -> Bool {
        let first = open(a, O_RDONLY | O_CLOEXEC)
        guard first >= 0 else { return false }
        defer { close(first) }
        let second = open(b, O_RDONLY | O_CLOEXEC)
        guard second >= 0 else { return false }
        defer { close(second) }
        var left = [UInt8](repeating: 0, count: 1 << 16)
        var right = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = Self.readFully(first, &left)
            guard count >= 0, Self.readFully(second, &right) == count else { return false }
            if count == 0 { return true }
            // memcmp, not `==` on the slices: a program is tens of megabytes, and element by element (in a debug
            // build above all) that took a minute.
            let equal = left.withUnsafeBytes { l in
                right.withUnsafeBytes { r in memcmp(l.baseAddress!, r.baseAddress!, count) == 0 }
            }
            guard equal else { return false }
        }
    }

    /// Reads until `buffer` is full or the file ends: the number of bytes read, -1 on an error.
    private static func readFully(_ descriptor: Int32, _ buffer: inout [UInt8]) -> Int {
        var total = 0
        while total < buffer.count {
            let count = buffer.withUnsafeMutableBytes { bytes in
                read(descriptor, bytes.baseAddress! + total, bytes.count - total)
            }
            if count < 0 && errno == EINTR { continue }
            if count < 0 { return -1 }
            if count == 0 { break }
            total += count
        }
        return total
    }
}
