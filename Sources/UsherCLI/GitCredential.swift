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
    struct GitCredential: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "git-credential",
            abstract: "Answer git's credential requests with the access token (a git credential helper).",
            discussion: """
                git runs it (see usher setup-git, or set credential.helper to "usher"): get prints \
                username=USERNAME, password=TOKEN and password_expiry_utc; store does nothing; erase (a token the \
                server refused) refreshes the token, so that git's next attempt gets a new one. With nobody \
                logged in (or the user named logged out, or usherd unreachable) get prints nothing and exits 0, \
                as git expects of a helper that has no credentials; the reason goes to stderr.
                """
        )

        @OptionGroup var options: GlobalOptions
        @OptionGroup var token: TokenOptions

        @Option(help: "The username git sends with the token (what the host expects: oauth2, x-access-token, ...).")
        var username = "oauth2"

        @Argument(help: "git's operation: get, store or erase.")
        var operation: String

        func run() throws {
            let request = Self.readRequest()
            switch self.operation {
            case "get": self.get()
            case "erase": self.erase(request)
            case "store": break
            default: break  // Operations a later git may add are ignored, as gitcredentials(7) asks of helpers.
            }
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
