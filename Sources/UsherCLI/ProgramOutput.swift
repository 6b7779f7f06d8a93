import UsherClient

extension Format {
    /// `usher whoami --program`: the program usherd identified at this end of the connection, and what it may do.
    static func programFields(_ hello: HelloRequest.Result) -> [String] {
        var pairs: [(String, String)] = []
        guard let program = hello.program else {
            pairs.append(("program", "not reported (usherd \(Terminal.escaped(hello.version)) predates it)"))
            pairs.append(("permissions", Self.permissions(hello.permissions)))
            return Output.fields(pairs)
        }
        pairs.append(("identified", program.identified ? "yes" : "no (rules with program conditions do not match)"))
        pairs.append(("executable", program.executable.map { Terminal.escaped($0) } ?? "-"))
        pairs.append(("sha256", program.executableSHA256 ?? "- (no rule asks for it)"))
        pairs.append(("unit", program.unit.map { Terminal.escaped($0) } ?? "-"))
        pairs.append(("user unit", program.userUnit.map { Terminal.escaped($0) } ?? "-"))
        pairs.append(("uid", "\(hello.peer.uid)"))
        pairs.append(("pid", "\(hello.peer.pid)"))
        pairs.append(("permissions", Self.permissions(hello.permissions)))
        return Output.fields(pairs)
    }

    private static func permissions(_ names: [String]) -> String {
        names.isEmpty ? "none (hello only)" : names.map { Terminal.escaped($0) }.joined(separator: ", ")
    }
}
