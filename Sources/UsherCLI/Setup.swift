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
                Writes credential.helper (or credential.https://HOST.helper with --host; HOST may end in a path, \
                for one repository or organisation, with credential.useHttpPath) as an empty value, which drops the \
                helpers configured before it for those URLs, then this usher with git-credential. --user maps the \
                host to one user of the device (default: whoever is the active user of the caller's seat); \
                --username is the user name the host expects beside a token (default oauth2; GitHub and Gitea \
                accept any, GitLab wants oauth2).
                """
        )

        @Option(
            help: "Only for this host (and path), e.g. git.example.com or git.example.com/team (https), or a URL."
        )
        var host: String?

        @Option(help: "Always this user's token for it: id or email.", completion: UserCompletion.kind)
        var user: String?

        @Option(help: "The user name git sends with the token.")
        var username: String?

        @Option(help: "Write to this git configuration file instead of the global one.")
        var file: String?

        func run() throws {
            var helper = "!" + Shell.quoted(try Self.executable()) + " git-credential"
            if let user = self.user { helper += " --user " + Shell.quoted(user) }
            if let username = self.username { helper += " --username " + Shell.quoted(username) }
            let url = self.host.map { $0.contains("://") ? $0 : "https://\($0)" }
            let key = url.map { "credential.\($0).helper" } ?? "credential.helper"
            let scope = self.file.map { ["--file", $0] } ?? ["--global"]
            try Spawn.run(["git", "config"] + scope + ["--replace-all", key, ""])
            try Spawn.run(["git", "config"] + scope + ["--add", key, helper])
            if let url, url.split(separator: "/", omittingEmptySubsequences: false).count > 3 {
                try Spawn.run(["git", "config"] + scope + ["credential.\(url).useHttpPath", "true"])
            }
            Output.line("git asks usher for credentials\(url.map { " for \($0)" } ?? "").")
        }

        /// This program's path, as git must run it.
        static func executable() throws -> String {
            var buffer = [CChar](repeating: 0, count: 4096)
            let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
            guard count > 0 else { throw CLIError("cannot tell where usher is installed (/proc/self/exe)") }
            return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }

    /// `usher setup-kube`: points a kubeconfig context at `usher kube-credential`, with kubectl's own `config`
    /// commands, which leave the rest of the file as it was.
    struct SetupKube: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "setup-kube",
            abstract: "Make usher the credential plugin of a kubectl context.",
            discussion: """
                Runs kubectl config set-credentials (an exec stanza that runs usher kube-credential) and kubectl \
                config set-context --user, so that only the user of that context changes in the kubeconfig \
                (KUBECONFIG or --kubeconfig, as kubectl finds it). The credential entry is named usher-CONTEXT.
                """
        )

        @Option(help: "The kubeconfig context.")
        var context: String

        @Option(help: "Always this user's token for it: id or email.", completion: UserCompletion.kind)
        var user: String?

        @Option(help: "How long the token must stay valid at least (as usher token --min-valid).")
        var minValid: String?

        @Option(help: "The kubeconfig file (default: kubectl's).")
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
            let file = self.kubeconfig.map { ["--kubeconfig", $0] } ?? []
            var arguments = ["kube-credential"]
            if let user = self.user { arguments += ["--user", user] }
            if let minValid = self.minValid { arguments += ["--min-valid", minValid] }
            try Spawn.run(
                ["kubectl", "config", "set-credentials", name] + file + [
                    "--exec-command=\(try SetupGit.executable())",
                    "--exec-api-version=\(self.apiVersion)",
                ] + arguments.map { "--exec-arg=\($0)" }
            )
            try Spawn.run(["kubectl", "config", "set-context", self.context, "--user=\(name)"] + file)
            Output.line("kubectl context \(Terminal.escaped(self.context)) gets its token from usher.")
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
}

/// Quoting for the shell git runs `!`-helpers with.
enum Shell {
    static func quoted(_ text: String) -> String {
        guard text.contains(where: { !($0.isLetter || $0.isNumber || "-_./@:=+".contains($0)) }) else { return text }
        return "'" + text.replacing("'", with: "'\\''") + "'"
    }
}
