import ArgumentParser

/// What the CLI does to its arguments before ArgumentParser sees them: the global options are moved to where every
/// subcommand accepts them, and a mistyped subcommand gets a suggestion instead of ArgumentParser's generic error.
enum CommandLineArguments {
    /// The options every command takes: `--json`, and `--socket` with its value.
    static let flags: Set<String> = ["--json"]
    static let optionsWithValue: Set<String> = ["--socket"]

    /// `--socket` and `--json` are global: `usher --socket P api-key list` means `usher api-key list --socket P`.
    /// ArgumentParser only accepts a subcommand's options after its name, so global options found anywhere before a
    /// `--` terminator are moved to the end of the arguments (before the terminator), where every subcommand takes
    /// them. Arguments after `--` (the command of `usher exec`) are never touched.
    static func globalOptionsMovedToTheEnd(_ arguments: [String]) -> [String] {
        let terminator = arguments.firstIndex(of: "--") ?? arguments.endIndex
        var global: [String] = []
        var rest: [String] = []
        var index = 0
        while index < terminator {
            let argument = arguments[index]
            if self.flags.contains(argument) || self.optionsWithValue.contains(where: { argument.hasPrefix($0 + "=") })
            {
                global.append(argument)
                index += 1
            } else if self.optionsWithValue.contains(argument), index + 1 < terminator {
                global.append(contentsOf: arguments[index...(index + 1)])
                index += 2
            } else {
                rest.append(argument)
                index += 1
            }
        }
        return rest + global + arguments[terminator...]
    }

    /// A message for a subcommand name that names no subcommand (`usher logni`), with the closest one when there is
    /// one (`did you mean 'login'?`, as git does); nil when the subcommands named are all known.
    static func unknownCommand(in arguments: [String], of root: any ParsableCommand.Type) -> String? {
        var command = root
        var path = [root.configuration.commandName ?? "usher"]
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            // ArgumentParser's own machinery (completion scripts, help dumps) and `--` end the check.
            if argument == "--" || argument.hasPrefix("---") || argument.hasPrefix("--generate-completion-script")
                || argument == "--experimental-dump-help"
            {
                return nil
            }
            if self.optionsWithValue.contains(argument) {
                index += 2
                continue
            }
            if argument.hasPrefix("-") {
                index += 1
                continue
            }
            let subcommands = command.configuration.subcommands
            guard !subcommands.isEmpty else { return nil }
            if let next = subcommands.first(where: { self.names(of: $0).contains(argument) }) {
                command = next
                path.append(argument)
                index += 1
                continue
            }
            if argument == "help" { return nil }
            let names = subcommands.flatMap { self.names(of: $0) }
            let usage = "see '\(path.joined(separator: " ")) --help'"
            if let closest = self.closest(to: argument, among: names) {
                return "'\(argument)' is not a command. Did you mean '\(closest)'? (\(usage))"
            }
            return "'\(argument)' is not a command; the commands are: "
                + subcommands.compactMap { $0.configuration.commandName }.joined(separator: ", ") + " (\(usage))"
        }
        return nil
    }

    /// A subcommand's name and aliases.
    static func names(of command: any ParsableCommand.Type) -> [String] {
        (command.configuration.commandName.map { [$0] } ?? []) + command.configuration.aliases
    }

    /// The name nearest to `word` in edit distance, if it is near enough to be a typo: at most 2 edits, and fewer
    /// than half the word's letters.
    static func closest(to word: String, among names: [String]) -> String? {
        let scored = names.map { (name: $0, distance: self.editDistance(word, $0)) }
        guard let best = scored.min(by: { $0.distance < $1.distance }) else { return nil }
        guard best.distance <= 2, best.distance * 2 < max(word.count, 2) else { return nil }
        return best.name
    }

    /// Damerau–Levenshtein distance (optimal string alignment): a swapped pair of letters (`logni`) is one edit.
    static func editDistance(_ first: String, _ second: String) -> Int {
        let a = Array(first.lowercased())
        let b = Array(second.lowercased())
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var table = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { table[i][0] = i }
        for j in 0...b.count { table[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                table[i][j] = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    table[i][j] = min(table[i][j], table[i - 2][j - 2] + 1)
                }
            }
        }
        return table[a.count][b.count]
    }
}
