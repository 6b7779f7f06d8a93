import ArgumentParser
import UsherClient

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension Usher {
    /// git's credential helper protocol (gitcredentials(7), git-credential(1)): git writes `key=value` lines and a blank
    /// line on stdin, and reads `key=value` lines back. `get` answers the access token as the password; `store` is
    /// ignored (usher is the source of the tokens, not a store); `erase`, git's answer to a rejected token, refreshes it
    /// so that the next `get` gets a new one.
    ///
    /// Installed as `git-credential-usher` too (a link to `usher`), so that `credential.helper = usher` works.
    ///
    /// It answers only for the hosts it was told to (`--host`, which `setup-git` records, and git's `usher.host`
    /// settings), and only over `https` (plain `http` to a loopback address alone): a helper that answered every
    /// request would send the token to any server a repository or a redirect names, in clear text over `http`.
    struct GitCredential: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "git-credential",
            abstract: "Answer git's credential requests with the access token (a git credential helper).",
            discussion: """
                git runs it (see usher setup-git, or set credential.helper to "usher"): get prints \
                username=USERNAME, password=TOKEN and password_expiry_utc; store does nothing; erase (a token the \
                server refused) refreshes the token, so that git's next attempt gets a new one. With nobody \
                logged in (or the user named logged out, or usherd unreachable) get prints nothing and exits 0, \
                as git expects of a helper that has no credentials; the reason goes to stderr. It answers only for \
                the hosts named by --host (setup-git records the one it was given) or by git's usher.host settings \
                (git config --global --add usher.host HOST), and only over https, or http to a loopback address; \
                for any other request it answers nothing and says why on stderr.
                """
        )

        @OptionGroup var options: GlobalOptions
        @OptionGroup var token: TokenOptions

        @Option(help: "The username git sends with the token (what the host expects: oauth2, x-access-token, ...).")
        var username = "oauth2"

        @Option(
            help: ArgumentHelp(
                "A host (HOST or HOST:PORT) the token may be sent to; repeat for more.",
                discussion: "With none, only the hosts of git's usher.host settings."
            )
        )
        var host: [String] = []

        @Argument(help: "git's operation: get, store or erase.")
        var operation: String

        func run() async throws {
            let request = Self.readRequest()
            switch self.operation {
            case "get":
                if let refusal = await self.refusal(request) {
                    Output.error("usher: no token for git: \(refusal)")
                    return
                }
                self.get()
            case "erase":
                // A refusal by a server usher never answered for is not usher's token's.
                guard await self.refusal(request) == nil else { return }
                self.erase(request)
            case "store": break
            default: break  // Operations a later git may add are ignored, as gitcredentials(7) asks of helpers.
            }
        }

        /// Why the token may not go where git's request is for (nil: it may): not `https` (nor `http` to a loopback
        /// address), or a host usher was not told to answer for.
        func refusal(_ request: [String: String]) async -> String? {
            guard let scheme = request["protocol"]?.lowercased(), let host = request["host"], !host.isEmpty else {
                return "git's request names no protocol and host"
            }
            let shown = Terminal.escaped("\(scheme)://\(host)")
            switch scheme {
            case "https": break
            case "http" where GitHost.isLoopback(host): break
            case "http": return "\(shown) is plain http, which would show the token to the network (https only)"
            default: return "\(shown) is not https"
            }
            let wanted = GitHost.normalized(host)
            if self.host.contains(where: { GitHost.normalized($0) == wanted }) { return nil }
            if await GitHost.configured().contains(where: { GitHost.normalized($0) == wanted }) { return nil }
            return "\(shown) is not a host usher answers for (usher setup-git --host HOST, "
                + "or git config --global --add usher.host HOST)"
        }

        /// git's request: `key=value` lines up to a blank line or the end of input (at most 64 KiB).
        static func readRequest() -> [String: String] {
            var fields: [String: String] = [:]
            guard let text = try? Secrets.standardInput(limit: 1 << 16) else { return fields }
            for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
                if line.isEmpty { break }
                guard let equals = line.firstIndex(of: "=") else { continue }
                fields[String(line[..<equals])] = String(line[line.index(after: equals)...])
            }
            return fields
        }

        private func get() {
            do {
                let connection = try BlockingConnection(to: self.options.location)
                let (token, _) = try self.token.token(on: connection)
                Output.line("username=\(self.username)")
                Output.line("password=\(token.accessToken)")
                Output.line("password_expiry_utc=\(token.expiresAt.secondsSinceEpoch)")
            } catch {
                // No credentials: git goes on to its next helper, or asks, or (GIT_TERMINAL_PROMPT=0) fails.
                Output.error("usher: no token for git: \(Self.reason(error))")
            }
        }

        private func erase(_ request: [String: String]) {
            do {
                let connection = try BlockingConnection(to: self.options.location)
                let (token, _) = try self.token.token(on: connection)
                // Only the token git was given: an older one was replaced already.
                guard let refused = request["password"], refused == token.accessToken else { return }
                _ = try connection.send(RefreshRequest(userID: token.userID))
            } catch {
                Output.error("usher: could not refresh the refused token: \(Self.reason(error))")
            }
        }

        static func reason(_ error: any Error) -> String {
            switch error {
            case let error as ResponseError: "\(Terminal.escaped(error.message)) (\(error.code))"
            case UsherClientError.cannotConnect(let location, let failure):
                Terminal.escaped(Usher.unreachableMessage(location, failure))
            case let error as CLIError: Terminal.escaped(error.description)
            default: Terminal.escaped(String(describing: error))
            }
        }
    }
}

/// The hosts of git's requests, as the helper compares them.
enum GitHost {
    /// `HOST[:PORT]` in lower case, without a trailing dot; a URL (`https://HOST:PORT/path`) gives its host and port.
    static func normalized(_ text: String) -> String {
        var host = Substring(text)
        if let scheme = host.firstRange(of: "://") { host = host[scheme.upperBound...] }
        host = host.prefix { $0 != "/" }
        if let at = host.lastIndex(of: "@") { host = host[host.index(after: at)...] }
        var result = host.lowercased()
        if result.hasSuffix(".") { result.removeLast() }
        return result
    }

    /// Whether `host` (`HOST[:PORT]` as git sends it) is a loopback address: `localhost`, 127.0.0.0/8 or `[::1]`.
    static func isLoopback(_ host: String) -> Bool {
        var name = Substring(host.lowercased())
        if name.hasPrefix("[") {
            return name.hasPrefix("[::1]")
        }
        if let colon = name.firstIndex(of: ":") { name = name[..<colon] }
        if name == "localhost" || name == "localhost." { return true }
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }

    /// git's `usher.host` settings (`git config --get-all usher.host`, as git sees them from where it ran the helper:
    /// its `-c` options reach the child through the environment), or none when git cannot be run (or prints more
    /// than 64 KiB, which no list of hosts is).
    static func configured() async -> [String] {
        guard let output = try? await Spawn.output(["git", "config", "--get-all", "usher.host"], limit: 1 << 16) else {
            return []
        }
        return output.split(whereSeparator: { $0.isWhitespace }).map(String.init)
    }
}
