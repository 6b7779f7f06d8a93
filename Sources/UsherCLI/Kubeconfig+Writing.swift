/// Writing `Kubeconfig`'s tree back as text, in the layout kubectl writes.
extension Kubeconfig {
    /// The file's text, in kubectl's layout: two spaces a level, a list's items at its key's indent.
    var text: String {
        var out = ""
        Self.write(self.root, indent: 0, into: &out)
        return out
    }

    private static func write(_ node: Node, indent: Int, into out: inout String) {
        let pad = String(repeating: " ", count: indent)
        switch node {
        case .scalar(let text):
            out += pad + text + "\n"
        case .mapping(let entries):
            if entries.isEmpty {
                out += pad + "{}\n"
                return
            }
            for entry in entries {
                Self.writeEntry(entry, pad: pad, indent: indent, into: &out)
            }
        case .sequence(let items):
            if items.isEmpty {
                out += pad + "[]\n"
                return
            }
            for item in items {
                Self.writeItem(item, pad: pad, indent: indent, into: &out)
            }
        }
    }

    private static func writeEntry(_ entry: Entry, pad: String, indent: Int, into out: inout String) {
        switch entry.value {
        case .scalar(let text):
            out += pad + entry.key + ": " + text + "\n"
        case .mapping(let entries) where entries.isEmpty:
            out += pad + entry.key + ": {}\n"
        case .sequence(let items) where items.isEmpty:
            out += pad + entry.key + ": []\n"
        case .mapping:
            out += pad + entry.key + ":\n"
            Self.write(entry.value, indent: indent + 2, into: &out)
        case .sequence:
            out += pad + entry.key + ":\n"
            Self.write(entry.value, indent: indent, into: &out)
        }
    }

    private static func writeItem(_ item: Node, pad: String, indent: Int, into out: inout String) {
        switch item {
        case .scalar(let text):
            out += pad + "- " + text + "\n"
        case .mapping(let entries) where !entries.isEmpty:
            // `- first: value`, the other entries under it.
            var nested = ""
            Self.write(item, indent: indent + 2, into: &nested)
            out += pad + "- " + nested.dropFirst(indent + 2)
        case .sequence(let items) where !items.isEmpty:
            var nested = ""
            Self.write(item, indent: indent + 2, into: &nested)
            out += pad + "- " + nested.dropFirst(indent + 2)
        case .mapping:
            out += pad + "- {}\n"
        case .sequence:
            out += pad + "- []\n"
        }
    }
}
