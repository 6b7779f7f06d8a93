/// Writing `Kubeconfig`'s tree back as text, in the layout kubectl writes.
extension Kubeconfig {
    /// The file's text, in kubectl's layout: two spaces a level, a list's items at its key's indent.
    var text: String {
        var out = ""
        Self.write(self.root, indent: 0, into: &out)
        return out
    }

    /// What `node` is written as on its key's or item's own line: a scalar's text, `{}` or `[]`. Nil for a mapping or
    /// a sequence with something in it, which goes on the lines below.
    private static func inline(_ node: Node) -> String? {
        switch node {
        case .scalar(let text): text
        case .mapping(let entries): entries.isEmpty ? "{}" : nil
        case .sequence(let items): items.isEmpty ? "[]" : nil
        }
    }

    private static func write(_ node: Node, indent: Int, into out: inout String) {
        let pad = String(repeating: " ", count: indent)
        if let inline = Self.inline(node) {
            out += pad + inline + "\n"
            return
        }
        switch node {
        case .scalar:
            break  // Written inline, above.
        case .mapping(let entries):
            for entry in entries {
                if let inline = Self.inline(entry.value) {
                    out += pad + entry.key + ": " + inline + "\n"
                    continue
                }
                out += pad + entry.key + ":\n"
                // A mapping's entries go two spaces in; a list's items stay at its key's indent.
                let nested = if case .mapping = entry.value { indent + 2 } else { indent }
                Self.write(entry.value, indent: nested, into: &out)
            }
        case .sequence(let items):
            for item in items {
                if let inline = Self.inline(item) {
                    out += pad + "- " + inline + "\n"
                    continue
                }
                // `- first: value` (or `- - x`), the rest under it.
                var nested = ""
                Self.write(item, indent: indent + 2, into: &nested)
                out += pad + "- " + nested.dropFirst(indent + 2)
            }
        }
    }
}
