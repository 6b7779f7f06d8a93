import UsherClient

/// `usher token` as scripts and shell prompts run it (`$(usher token)`, `usher token --header | curl -H @- ...`),
/// read without ArgumentParser.
///
/// ArgumentParser finds a command's arguments by `Mirror` reflection and casts each property to its protocols; every
/// first cast of a type walks all of the binary's protocol conformance records (8,000, the daemon's as well as the
/// CLI's). Parsing `usher token` so, even as the one command (`Token.parse`), took 15 of the process's 22 million
/// instructions (callgrind), most of its run. The forms read here are those whose meaning is beyond doubt: `token`
/// with at most one of `--header`, `--expires` and `--type`, `--json`, and `--socket PATH` (or `--socket=PATH`), each
/// at most once. Anything else (another option, a value that starts with `-`, help, a repeated or conflicting flag)
/// goes to ArgumentParser from the root, which parses it, or reports the error, as it always did.
struct QuickToken {
    var printing: Usher.Token.Printing = .token
    var json = false
    var socket: String?

    /// The command line read here, or nil for ArgumentParser. `arguments` are those after the program's name, with
    /// the global options moved to the end (`CommandLineArguments.globalOptionsMovedToTheEnd`).
    init?(_ arguments: [String]) {
        guard arguments.first == "token" else { return nil }
        var printing: Usher.Token.Printing?
        var index = 1
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            switch argument {
            case "--header", "--expires", "--type":
                guard printing == nil else { return nil }
                printing = argument == "--header" ? .header : argument == "--expires" ? .expiry : .type
            case "--json":
                guard !self.json else { return nil }
                self.json = true
            case "--socket":
                guard self.socket == nil, index < arguments.count, Self.isPath(arguments[index]) else { return nil }
                self.socket = arguments[index]
                index += 1
            default:
                guard argument.hasPrefix("--socket="), self.socket == nil else { return nil }
                let path = String(argument.dropFirst("--socket=".count))
                guard Self.isPath(path) else { return nil }
                self.socket = path
            }
        }
        self.printing = printing ?? .token
    }

    /// A value taken as `--socket`'s here: not empty, and not one ArgumentParser could read as an option.
    private static func isPath(_ value: String) -> Bool {
        !value.isEmpty && !value.hasPrefix("-")
    }

    /// What `usher token` with these arguments does: the active user's token (or the seat's, as usherd chooses),
    /// valid for the default minimum.
    func run() throws {
        try Usher.Token.print(self.printing, at: SocketLocation.resolve(explicitPath: self.socket), json: self.json) {
            _ in AccessTokenRequest()
        }
    }
}
