import UsherClient

/// Naming users the way docs/cli.md promises, in what the CLI prints and in the daemon's messages it passes on: by
/// email, else by name, else by id. The daemon's answers and errors carry ids; the CLI looks the users up once.
enum UserNames {
    /// A daemon error as a person at the CLI should read it: the users it names by id named as the CLI names them, and
    /// what to run given as the CLI command, not the protocol method.
    ///
    /// - Parameter users: the users on the device (`namesUsers` says whether they are needed).
    static func humanized(_ error: ResponseError, users: [UserInfo]?) -> ResponseError {
        var humane = error
        if error.code == .accountUnconfirmed {
            humane.message =
                "the account is not confirmed yet; confirm it with the token its confirmation delivered: usher confirm"
        }
        guard let users, Self.namesUsers(humane) else { return humane }
        for user in users where humane.message.contains(user.id) {
            let who = Format.who(user)
            guard who != user.id else { continue }
            humane.message = humane.message.replacing(user.id, with: who)
        }
        return humane
    }

    /// Whether the error's message may name a user by id (so that the users are worth looking up).
    static func namesUsers(_ error: ResponseError) -> Bool { error.message.contains("u_") }
}

extension Session {
    /// How the CLI names each of `userIDs`, in order (an id no user on the device has stays as it is).
    func names(of userIDs: [String]) async -> [String] {
        guard !userIDs.isEmpty, let users = try? await self.client.listUsers().users else { return userIDs }
        return userIDs.map { id in users.first { $0.id == id }.map(Format.who) ?? Terminal.escaped(id) }
    }

    /// How the CLI names one user.
    func name(of userID: String) async -> String {
        await self.names(of: [userID])[0]
    }

    /// `UserNames.humanized`, looking the users up on this session's connection.
    func humanized(_ error: ResponseError) async -> ResponseError {
        let users = UserNames.namesUsers(error) ? try? await self.client.listUsers().users : nil
        return UserNames.humanized(error, users: users)
    }
}

extension BlockingConnection {
    /// Runs `body`, its daemon errors humanized (`UserNames`) on this connection: for the commands that keep a
    /// blocking connection to start quickly.
    func namingUsers<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as ResponseError {
            let users = UserNames.namesUsers(error) ? try? self.send(ListUsersRequest()).users : nil
            throw UserNames.humanized(error, users: users)
        }
    }
}
