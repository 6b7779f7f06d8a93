import Dispatch
import UsherClient

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
extension Usher.Login {
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
            let listener: LoopbackListener
            do {
                listener = try LoopbackListener(host: host, port: port)
            } catch let error as LoopbackListener.BindError where error.inUse && attempt < 3 {
                // Another process took the port the daemon picked: start over with a new one.
                continue
            }
            defer { listener.close() }
            self.show(authorizeURL)
            let deadline = begun.expiresAt
            let callback = try await listener.waitForCallback(path: redirect.path, state: state, until: deadline)
            let credentials: [String: JSONValue] = [
                "type": "authorization_code", "code": .string(callback), "code_verifier": .string(verifier),
                "redirect_uri": .string(redirectURI), "state": .string(state),
            ]
            try await self.options.withSession { session in
                var request = LoginRequest(provider: self.provider, credentials: credentials)
                request.seat = self.seat
                let result = try await session.perform(request)
                guard !session.json else { return }
                Output.lines(Format.userFields(result.user))
            }
            return
        }
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
    /// `posix_spawn` rather than Foundation's `Process`, which would link Foundation into the CLI (see Output). The
    /// child is not reaped: usher exits soon after the login, and the child is then reaped by init.
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
        return posix_spawn(&pid, "/usr/bin/env", &actions, nil, arguments + [nil], environ) == 0
    }

    /// The device flow: the daemon starts it and polls the provider; the CLI shows the code and waits with
    /// `login_wait`.
    func runDeviceFlow() async throws {
        try await self.options.withSession { session in
            let begun = try await session.client.send(
                LoginBeginRequest(provider: self.provider, type: LoginBeginRequest.deviceCode)
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
                group.addTask { try await session.perform(LoginWaitRequest(loginID: loginID, seat: self.seat)) }
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

/// A one-shot HTTP listener on a loopback address: the redirect target of the browser flow.
///
/// It answers the browser, checks the `state` of the redirect and returns the authorization code. Everything else
/// (a favicon request, a redirect without the right state) is answered and ignored, except a redirect that carries
/// the login's state with an `error`, which ends the login.
final class LoopbackListener: Sendable {
    struct BindError: Error, CustomStringConvertible {
        var inUse: Bool
        var description: String
    }

    private let descriptor: Int32

    init(host: String, port: Int) throws {
        let isIPv6 = host.contains(":")
        let descriptor = socket(
            isIPv6 ? AF_INET6 : AF_INET,
            Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue),
            0
        )
        guard descriptor >= 0 else { throw CLIError("cannot create a socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound: Int32
        if isIPv6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_addr = in6addr_loopback
            address.sin6_port = UInt16(port).bigEndian
            bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = in_addr_t(0x7F00_0001).bigEndian
            address.sin_port = UInt16(port).bigEndian
            bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        guard bound == 0, listen(descriptor, 8) == 0 else {
            let code = errno
            Glibc.close(descriptor)
            throw BindError(
                inUse: code == EADDRINUSE,
                description: "cannot listen on \(host):\(port): \(String(cString: strerror(code)))"
            )
        }
        self.descriptor = descriptor
    }

    func close() {
        Glibc.close(self.descriptor)
    }

    /// Waits for the redirect on `path` with `state`, until `deadline`; returns the code.
    ///
    /// The waiting happens on a Dispatch thread: accepting and reading block, and must not hold one of the few
    /// threads of the cooperative pool.
    func waitForCallback(path: String, state: String, until deadline: Timestamp) async throws -> String {
        let descriptor = self.descriptor
        let result: Result<String, CLIError> = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(returning: Self.serve(descriptor, path: path, state: state, until: deadline))
            }
        }
        return try result.get()
    }

    private static func serve(
        _ listener: Int32,
        path: String,
        state: String,
        until deadline: Timestamp
    )
        -> Result<String, CLIError>
    {
        while true {
            let remaining = deadline.millisecondsSinceEpoch - Timestamp.now().millisecondsSinceEpoch
            guard remaining > 0 else { return .failure(CLIError("the login expired before the browser came back")) }
            var poller = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(min(remaining, 1000)))
            if ready < 0, errno != EINTR { return .failure(CLIError("waiting for the browser failed")) }
            guard ready > 0 else { continue }
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { continue }
            defer { Glibc.close(connection) }
            var timeout = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            guard let target = Self.readRequestTarget(connection),
                let components = URLComponents(string: "http://localhost" + target), components.path == path
            else {
                Self.respond(connection, status: "404 Not Found", body: "Not found.")
                continue
            }
            let query = Dictionary(
                (components.queryItems ?? []).map { ($0.name, $0.value ?? "") },
                uniquingKeysWith: { first, _ in first }
            )
            guard query["state"] == state else {
                // Not this login's redirect (a stale tab, or a forgery): ignore it and keep waiting.
                Self.respond(connection, status: "400 Bad Request", body: "This is not the login usher is waiting for.")
                continue
            }
            if let error = query["error"] {
                Self.respond(
                    connection,
                    status: "200 OK",
                    body: "The login failed (\(Self.escaped(error))). You can close this window."
                )
                let description = query["error_description"].map { ": \($0)" } ?? ""
                return .failure(CLIError(Terminal.escaped("the provider refused the login: \(error)\(description)")))
            }
            guard let code = query["code"], !code.isEmpty else {
                Self.respond(connection, status: "400 Bad Request", body: "The redirect carries no code.")
                return .failure(CLIError("the provider's redirect carried no code"))
            }
            Self.respond(connection, status: "200 OK", body: "You are logged in. You can close this window.")
            return .success(code)
        }
    }

    /// The request target of the first line (`GET /callback?code=... HTTP/1.1`), reading at most 16 KiB.
    private static func readRequestTarget(_ connection: Int32) -> String? {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while received.count < 16384 {
            let count = chunk.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            received.append(contentsOf: chunk[..<count])
            if received.firstIndex(of: UInt8(ascii: "\n")) != nil { break }
        }
        guard let end = received.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
        let parts = String(decoding: received[..<end], as: UTF8.self).split(separator: " ")
        guard parts.count >= 2, parts[0] == "GET" else { return nil }
        return String(parts[1])
    }

    private static func escaped(_ text: String) -> String {
        Text.htmlEscaped(text.prefix(200))
    }

    private static func respond(_ connection: Int32, status: String, body: String) {
        let html = "<!doctype html><title>usher</title><p>\(body)</p>\n"
        let response =
            "HTTP/1.1 \(status)\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: \(html.utf8.count)\r\n"
            + "Connection: close\r\nCache-Control: no-store\r\n\r\n" + html
        var bytes = Array(response.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { return }
            bytes = bytes.dropFirst(written)
        }
    }
}
