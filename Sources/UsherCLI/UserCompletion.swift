import ArgumentParser
import UsherClient

/// Shell completion of user arguments (`switch`, `logout`, `remove`, `--user`): the emails of the users on the
/// device (the id of a user without one), asked of the daemon when the shell completes.
///
/// The shell runs `usher ---completion ...` with the words typed so far; a `--socket` among them is honoured. A
/// daemon that cannot be reached completes nothing rather than printing an error into the command line.
enum UserCompletion {
    static let kind = CompletionKind.custom { arguments, _, prefix in
        UserCompletion.references(socket: UserCompletion.socket(in: arguments), prefix: prefix)
    }

    /// The `--socket` value among the words typed, if any.
    static func socket(in arguments: [String]) -> String? {
        for (index, argument) in arguments.enumerated() {
            if argument.hasPrefix("--socket=") { return String(argument.dropFirst("--socket=".count)) }
            if argument == "--socket", index + 1 < arguments.count { return arguments[index + 1] }
        }
        return nil
    }

    /// The references that start with `prefix`, emails first.
    static func references(socket: String?, prefix: String) -> [String] {
        guard let connection = try? BlockingConnection(to: SocketLocation.resolve(explicitPath: socket)),
            let users = try? connection.send(ListUsersRequest()).users
        else { return [] }
        let references = users.map { $0.email ?? $0.id }.filter { reference in
            // A reference with a control character (refused by the daemon anyway) must not reach the shell.
            !reference.unicodeScalars.contains(where: Terminal.isControlCharacter)
        }
        return references.filter { $0.lowercased().hasPrefix(prefix.lowercased()) }
    }
}
