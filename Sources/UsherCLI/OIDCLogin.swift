import UsherClient
import UsherLoopbackServer

// URLComponents: FoundationEssentials, never Foundation (see Output).
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// The interactive logins of OpenID Connect providers: the browser flow (authorization code with PKCE on a loopback
/// redirect, RFC 8252) and the device flow (RFC 8628).
extension Usher.LoginOptions {
    /// The browser flow: the daemon starts the login (state, nonce, PKCE), the CLI listens on the loopback redirect,
    /// opens (or prints) the URL, checks that the redirect carries the same state, and hands the code and verifier to
    /// the daemon, which exchanges them.
    func runBrowserFlow() async throws {
        var attempt = 0
        while true {
            attempt += 1
            let location = SocketLocation.resolve(explicitPath: self.options.socket)
            let begun = try await UsherClient.withConnection(to: location) { client in
                try await client.send(LoginBeginRequest(provider: self.provider))
            }
            guard let authorizeURL = begun.authorizeURL, let state = begun.state, let verifier = begun.codeVerifier,
                let redirectURI = begun.redirectURI, let redirect = URLComponents(string: redirectURI),
                let host = redirect.host, let port = redirect.port
            else { throw CLIError("usherd did not start a browser login") }
            let path = redirect.path
            let server: LoopbackHTTPServer
            do {
                server = try await LoopbackHTTPServer.start(host: host, port: port) { method, target in
                    RedirectAnswer.answer(method: method, target: target, path: path, state: state)
                }
            } catch let error where error.inUse && attempt < 3 {
                // Another process took the port the daemon picked: start over with a new one.
                continue
            } catch {
                throw CLIError(error.description)
            }
            let callback: String
            do {
                self.show(authorizeURL)
                let remaining = begun.expiresAt.millisecondsSinceEpoch - Timestamp.now().millisecondsSinceEpoch
                callback = try await server.outcome(within: .milliseconds(max(remaining, 0)))
                await server.close()
            } catch is LoopbackHTTPServer.TimedOut {
                await server.close()
                throw CLIError("the login expired before the browser came back")
            } catch {
                await server.close()
                throw error
            }
            let credentials: [String: JSONValue] = [
                "type": "authorization_code", "code": .string(callback), "code_verifier": .string(verifier),
                "redirect_uri": .string(redirectURI), "state": .string(state),
            ]
            return try await self.logIn(LoginRequest(provider: self.provider, credentials: credentials))
        }
    }

    /// Under `usher link`: the id of the user to link to (`--user`, else the seat's active user); nil for a login.
    private func linkTarget(in session: Session) async throws -> String? {
        guard let target = Linking.target else { return nil }
        if let user = target.user {
            let id: String = try await session.userID(for: user)
            return id
        }
        guard let active = try await session.perform(CurrentUserRequest(seat: self.seat)).user else {
            throw CLIError("no user is logged in to link to", exitCode: Usher.Exit.notLoggedIn)
        }
        return active.id
    }

    /// Opens the URL with `xdg-open` when a graphical session exists (and `--no-browser` was not given); the URL is
    /// printed on stderr either way, alone on its line, so that it can be copied or scripted.
    private func show(_ url: String) {
        let names: [String] = ["DISPLAY", "WAYLAND_DISPLAY"]
        let hasDisplay = names.contains { name in getenv(name).map { $0.pointee != 0 } ?? false }
        if !self.noBrowser && hasDisplay, Self.openInBrowser(url) {
            Output.error("Opening the browser to log in. If it does not open, visit:")
        } else {
            Output.error("To log in, open this URL in a browser:")
        }
        Output.error(Terminal.escaped(url))
    }

    /// Starts `/usr/bin/env xdg-open URL` with its standard streams on `/dev/null`, and does not wait for it.
    ///
    /// `posix_spawn`, not swift-subprocess (`Spawn`), which starts a program only to wait for it: the login must not
    /// wait for the browser (`xdg-open` can run a text browser in the foreground until it is closed). The child is not
    /// reaped: usher exits soon after the login, and the child is then reaped by init.
    private static func openInBrowser(_ url: String) -> Bool {
        var actions = posix_spawn_file_actions_t()
        guard posix_spawn_file_actions_init(&actions) == 0 else { return false }
        defer { posix_spawn_file_actions_destroy(&actions) }
        for descriptor in [STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO] {
            let flags = descriptor == STDIN_FILENO ? O_RDONLY : O_WRONLY
            guard posix_spawn_file_actions_addopen(&actions, descriptor, "/dev/null", flags, 0) == 0 else {
                return false
            }
        }
        let arguments: [UnsafeMutablePointer<CChar>?] = ["/usr/bin/env", "xdg-open", url].map { (argument: String) in
            strdup(argument)
        }
        defer { for argument in arguments { free(argument) } }
        var pid = pid_t()
        let spawned = CoreDumps.restored {
            posix_spawn(&pid, "/usr/bin/env", &actions, nil, arguments + [nil], environ)
        }
        return spawned == 0
    }

    /// The device flow: the daemon starts it and polls the provider; the CLI shows the code and waits with
    /// `login_wait`.
    func runDeviceFlow() async throws {
        try await self.options.withSession { session in
            let begun = try await session.client.send(
                LoginBeginRequest(provider: self.provider, type: .deviceCode)
            )
            guard let loginID = begun.loginID, let userCode = begun.userCode, let uri = begun.verificationURI else {
                throw CLIError("usherd did not start a device login")
            }
            // Escaped: all three came from the provider.
            Output.error("To log in, visit \(Terminal.escaped(uri)) and enter the code:")
            // The code alone on its line, to copy (and for scripts to find).
            Output.error(Terminal.paint(Terminal.escaped(userCode), .bold, enabled: Terminal.colours(STDERR_FILENO)))
            if let complete = begun.verificationURIComplete { Output.error("(or open \(Terminal.escaped(complete)))") }
            let expiresAt = begun.expiresAt
            let countdown = Terminal.isTerminal(STDERR_FILENO)
            if !countdown { Output.error("Waiting until \(Format.time(expiresAt)) (Ctrl-C to cancel)...") }
            let result = try await withThrowingTaskGroup(of: LoginWaitRequest.Result?.self) { group in
                let linkTo = try await self.linkTarget(in: session)
                group.addTask {
                    try await session.perform(LoginWaitRequest(loginID: loginID, seat: self.seat, linkTo: linkTo))
                }
                if countdown {
                    // On a terminal, the time left runs down on one line, rewritten every second.
                    group.addTask {
                        while !Task.isCancelled {
                            Output.errorInPlace(Self.timeLeft(until: expiresAt))
                            try await Task.sleep(for: .seconds(1))
                        }
                        return nil
                    }
                }
                defer { if countdown { Output.errorInPlace(nil) } }
                while let next = try await group.next() {
                    if let result = next {
                        group.cancelAll()
                        return result
                    }
                }
                throw CLIError("usherd did not answer the device login")
            }
            guard !session.json else { return }
            Output.lines(Format.userFields(result.user))
        }
    }

    /// `Waiting for the login: 9m 58s left (Ctrl-C to cancel)`.
    static func timeLeft(until deadline: Timestamp, now: Timestamp = .now()) -> String {
        let seconds = (deadline.millisecondsSinceEpoch - now.millisecondsSinceEpoch + 999) / 1000
        return "Waiting for the login: \(Format.duration(seconds)) left (Ctrl-C to cancel)"
    }
}

/// What the browser login's redirect listener answers: the browser is told whether the login went through, and the
/// redirect's `state` is checked before anything else is looked at.
///
/// Everything else (a favicon request, a redirect without the right state) is answered and ignored, except a redirect
/// that carries the login's state with an `error`, which ends the login.
enum RedirectAnswer {
    static func answer(method: String, target: String, path: String, state: String) -> LoopbackHTTPServer.Answer {
        guard method == "GET", let components = URLComponents(string: "http://localhost" + target),
            components.path == path
        else { return Self.page(404, "Not found.") }
        let query = Dictionary(
            (components.queryItems ?? []).map { ($0.name, $0.value ?? "") },
            uniquingKeysWith: { first, _ in first }
        )
        guard query["state"] == state else {
            // Not this login's redirect (a stale tab, or a forgery): ignore it and keep waiting.
            return Self.page(400, "This is not the login usher is waiting for.")
        }
        if let error = query["error"] {
            let description = query["error_description"].map { ": \($0)" } ?? ""
            return Self.page(
                200,
                "The login failed (\(Text.htmlEscaped(error.prefix(200)))). You can close this window.",
                outcome: .failure(CLIError(Terminal.escaped("the provider refused the login: \(error)\(description)")))
            )
        }
        guard let code = query["code"], !code.isEmpty else {
            return Self.page(
                400,
                "The redirect carries no code.",
                outcome: .failure(CLIError("the provider's redirect carried no code"))
            )
        }
        return Self.page(200, "You are logged in. You can close this window.", outcome: .success(code))
    }

    private static func page(
        _ status: Int,
        _ body: String,
        outcome: Result<String, any Error>? = nil
    ) -> LoopbackHTTPServer.Answer {
        LoopbackHTTPServer.Answer(
            status: status,
            html: "<!doctype html><title>usher</title><p>\(body)</p>\n",
            outcome: outcome
        )
    }
}
