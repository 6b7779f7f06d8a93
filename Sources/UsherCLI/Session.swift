import ArgumentParser
import UsherClient

/// The options every command takes.
struct GlobalOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The daemon's socket (default: $USHER_SOCKET, else $XDG_RUNTIME_DIR/usher/usher.sock, else /run/usher/usher.sock).",
            valueName: "path"
        )
    )
    var socket: String?

    @Flag(name: .long, help: "Print the JSON result of the call as usherd sent it, on one line.")
    var json = false

    /// Where the daemon's socket is.
    var location: SocketLocation { SocketLocation.resolve(explicitPath: self.socket) }

    /// Connects, runs `body`, and disconnects.
    func withSession(_ body: (Session) async throws -> Void) async throws {
        try await UsherClient.withConnection(to: self.location) { client in
            let session = Session(client: client, json: self.json)
            do {
                try await body(session)
            } catch let error as ResponseError {
                // Named as the CLI names users, while the connection is still open to look them up.
                throw await session.humanized(error)
            }
        }
    }
}

/// One command's connection, with the CLI's conventions on top of the client.
struct Session {
    let client: UsherClient
    /// Whether `--json` asked for the raw result instead of readable output.
    let json: Bool

    /// The command's main call: with `--json`, its result is printed as the daemon sent it. (Without, the result is
    /// decoded only into its type.)
    func perform<Request: UsherRequest>(_ request: Request) async throws -> Request.Result {
        guard self.json else { return try await self.client.send(request) }
        let (result, json) = try await self.client.sendReturningJSON(request)
        Output.json(json)
        return result
    }

    /// Turns a user reference into a user id. An argument with an `@` is an email, matched case-insensitively against
    /// the users on the device (an exact id match wins); anything else is an id, passed on as it is.
    func userID(for reference: String) async throws -> String {
        guard reference.contains("@") else { return reference }
        return try Self.userID(forEmail: reference, among: try await self.client.listUsers().users)
    }

    /// `userID(for:)` for a reference with an `@`, given the users on the device.
    static func userID(forEmail reference: String, among users: [UserInfo]) throws -> String {
        if let user = users.first(where: { $0.id == reference }) { return user.id }
        let wanted = reference.lowercased()
        let matches = users.filter { $0.email?.lowercased() == wanted }
        switch matches.count {
        case 0:
            throw ResponseError(.userNotFound, "no user with the email \(reference)")
        case 1:
            return matches[0].id
        default:
            let ids = matches.map { "\($0.id) (\($0.provider))" }.joined(separator: ", ")
            throw CLIError("several users have the email \(reference): \(ids); name one by its id")
        }
    }

    /// The user a reference names, as the daemon describes it, so that output can name it by email; nil when no user
    /// matches (the daemon's own answer then says so). Without a reference: the active user.
    func user(for reference: String?) async throws -> UserInfo? {
        let users = try await self.client.listUsers().users
        guard let reference else { return users.first(where: \.active) }
        let id = reference.contains("@") ? try Self.userID(forEmail: reference, among: users) : reference
        return users.first { $0.id == id }
    }

    /// `userID(for:)` for an optional argument.
    func userID(for reference: String?) async throws -> String? {
        guard let reference else { return nil }
        let id: String = try await self.userID(for: reference)
        return id
    }
}
