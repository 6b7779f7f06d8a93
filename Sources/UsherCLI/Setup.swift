import ArgumentParser
import UsherClient

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension Usher {
    /// `usher setup-git`: makes usher git's credential helper, for every host or one, as `gh auth setup-git` does.
    struct SetupGit: AsyncParsableCommand {
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
            let https = url.lowercased().hasPrefix("https://")
            guard https || url.lowercased().hasPrefix("http://") else {
                throw ValidationError("--host: a host, host/path or an https:// URL")
            }
            let host = GitHost.normalized(url)
            guard !host.isEmpty else { throw ValidationError("--host: no host in \(url)") }
            guard https || GitHost.isLoopback(host) else {
                throw ValidationError(
                    "--host: usher sends tokens over https only (plain http only to a loopback address)"
                )
            }
        }

        /// The URL git's configuration is keyed by: `--host` as given, `https://` when it names no scheme.
        var url: String { self.host.contains("://") ? self.host : "https://\(self.host)" }

        func run() async throws {
            let program = try ProgramPath.forOtherTools()
            let url = self.url
            var helper = "!" + Shell.quoted(program.path) + " git-credential"
            helper += " --host " + Shell.quoted(GitHost.normalized(url))
            if let user = self.user { helper += " --user " + Shell.quoted(user) }
            if let username = self.username { helper += " --username " + Shell.quoted(username) }
            let key = "credential.\(url).helper"
            let scope = self.file.map { ["--file", $0] } ?? ["--global"]
            try await Spawn.run(["git", "config"] + scope + ["--replace-all", key, ""])
            try await Spawn.run(["git", "config"] + scope + ["--add", key, helper])
            if url.split(separator: "/", omittingEmptySubsequences: false).count > 3 {
                try await Spawn.run(["git", "config"] + scope + ["credential.\(url).useHttpPath", "true"])
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

/// Quoting for the shell git runs `!`-helpers with.
enum Shell {
    static func quoted(_ text: String) -> String {
        guard text.contains(where: { !($0.isLetter || $0.isNumber || "-_./@:=+".contains($0)) }) else { return text }
        return "'" + text.replacing("'", with: "'\\''") + "'"
    }
}
