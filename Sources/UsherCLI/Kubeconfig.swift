/// A kubeconfig file, read and written by usher itself rather than through `kubectl config set-credentials`, which
/// panics on realistic kubeconfigs in the kubectl that Debian 12 ships (1.20: a nil map in its JSON iterator).
///
/// A kubeconfig is YAML, as kubectl writes it: block mappings and sequences of plain or quoted scalars, `{}` and `[]`
/// (and JSON, which is YAML's flow style). This reads that subset into a tree that keeps each scalar's text as written
/// (so `true`, `"true"`, `8443` and `null` stay what they were), changes one context's user and one user entry, and
/// writes the tree back in kubectl's own layout. Everything else the file holds stays: other users, contexts,
/// clusters, preferences, extensions, in their order. Comments go, as they do when kubectl writes the file. What the
/// subset does not cover (anchors, aliases, tags, several documents) is refused with a message, never half-read.
///
/// Not a YAML library: the one in reach (Yams) needs the whole of Foundation and ICU, which the CLI does not link
/// (`make check-no-foundation`, docs/performance.md).
///
/// This file holds the tree and the one edit setup-kube makes; reading is in `Kubeconfig+Reading.swift` (block style)
/// and `Kubeconfig+FlowReading.swift` (flow style, JSON), scalars in `Kubeconfig+Scalars.swift`, writing in
/// `Kubeconfig+Writing.swift`.
struct Kubeconfig {
    indirect enum Node: Equatable, Sendable {
        /// A scalar's text as written: plain (`v1`, `null`, `true`), or quoted with its quotes (`"a b"`, `'x'`).
        case scalar(String)
        case mapping([Entry])
        case sequence([Node])

        static let null = Node.scalar("null")
    }

    struct Entry: Equatable, Sendable {
        /// The key as written (plain or quoted).
        var key: String
        var value: Node
    }

    struct Problem: Error, CustomStringConvertible {
        var description: String
    }

    var root: Node

    // MARK: Editing (what setup-kube changes)

    /// The mapping entry `key`'s value.
    static func value(_ key: String, in entries: [Entry]) -> Node? {
        entries.first { Self.unquoted($0.key) == key }?.value
    }

    static func setting(_ key: String, to value: Node, in entries: [Entry]) -> [Entry] {
        var entries = entries
        if let index = entries.firstIndex(where: { Self.unquoted($0.key) == key }) {
            entries[index].value = value
        } else {
            entries.append(Entry(key: key, value: value))
        }
        return entries
    }

    /// The entries of the top-level mapping (`apiVersion`, `clusters`, `contexts`, `users`...).
    func topLevel() throws(Problem) -> [Entry] {
        guard case .mapping(let entries) = self.root else {
            throw Problem(description: "the kubeconfig is not a mapping of apiVersion, clusters, contexts, users...")
        }
        return entries
    }

    /// The named items of the list `key` (`contexts`, `users`) of the top-level `entries`: null and missing are empty
    /// lists.
    static func namedItems(_ key: String, in entries: [Entry]) throws(Problem) -> [Node] {
        switch Self.value(key, in: entries) {
        case nil, .scalar("null")?, .scalar("~")?: return []
        case .sequence(let items)?: return items
        default: throw Problem(description: "\(key) is not a list")
        }
    }

    static func name(of item: Node) -> String? {
        guard case .mapping(let entries) = item, case .scalar(let name)? = Self.value("name", in: entries) else {
            return nil
        }
        return Self.unquoted(name)
    }

    /// Whether the kubeconfig has the context `name`.
    func hasContext(_ name: String) throws(Problem) -> Bool {
        try Self.namedItems("contexts", in: self.topLevel()).contains { Self.name(of: $0) == name }
    }

    /// Points the context `context` at the user `userName`, whose credentials come from `exec` (replacing a user of
    /// that name, keeping the rest of its entry).
    mutating func setExecUser(_ userName: String, exec: Node, forContext context: String) throws(Problem) {
        var root = try self.topLevel()
        var contexts = try Self.namedItems("contexts", in: root)
        guard let contextIndex = contexts.firstIndex(where: { Self.name(of: $0) == context }),
            case .mapping(var contextEntries) = contexts[contextIndex]
        else { throw Problem(description: "no context \(context)") }
        var inner: [Entry]
        switch Self.value("context", in: contextEntries) {
        case .mapping(let entries)?: inner = entries
        case nil, .scalar("null")?: inner = []
        default: throw Problem(description: "context \(context) is not a mapping")
        }
        inner = Self.setting("user", to: Self.string(userName), in: inner)
        contextEntries = Self.setting("context", to: .mapping(inner), in: contextEntries)
        contexts[contextIndex] = .mapping(contextEntries)

        var users = try Self.namedItems("users", in: root)
        let user = Node.mapping([Entry(key: "exec", value: exec)])
        if let index = users.firstIndex(where: { Self.name(of: $0) == userName }),
            case .mapping(let entries) = users[index]
        {
            users[index] = .mapping(Self.setting("user", to: user, in: entries))
        } else {
            users.append(.mapping([Entry(key: "name", value: Self.string(userName)), Entry(key: "user", value: user)]))
        }
        root = Self.setting("contexts", to: .sequence(contexts), in: root)
        root = Self.setting("users", to: .sequence(users), in: root)
        self.root = .mapping(root)
    }
}
