import Foundation
import Testing
import UsherProtocol
import UsherServer

/// docs/protocol.md, "Whose user", is the table of which methods need the peer to own the user or login they are
/// about; each method declares its rule once, in its handler (`MethodHandler.owner`). The two must say the same.
struct OwnerRuleTableTests {
    /// The table's rows: method → rule, as documented.
    static func documentedRules() throws -> [String: String] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let text = try String(contentsOf: root.appending(path: "docs/protocol.md"), encoding: .utf8)
        let section = try #require(text.components(separatedBy: "### Whose user\n").dropFirst().first)
        var rules: [String: String] = [:]
        for line in section.split(separator: "\n").drop(while: { !$0.hasPrefix("| method |") }).dropFirst(2) {
            guard line.hasPrefix("|") else { break }
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            rules[cells[0].trimmingCharacters(in: CharacterSet(charactersIn: "`"))] = cells[1]
        }
        return rules
    }

    @Test func everyMethodsRuleIsTheDocumentedOne() throws {
        let documented = try Self.documentedRules()
        #expect(!documented.isEmpty)
        for name in documented.keys { #expect(Method(rawValue: name) != nil, "the table names no method \(name)") }
        for method in Method.allCases {
            let declared = MethodHandler.for(method).owner
            #expect(
                declared.rawValue == documented[method.rawValue] ?? OwnerRule.none.rawValue,
                "\(method.rawValue): declared \(declared.rawValue), documented \(documented[method.rawValue] ?? "none")"
            )
        }
    }

    /// What a request may change about a user is decided by who the peer is, not only by its permission: the methods
    /// that add or remove a way to log in as a user, or delete it, are never left to the permission alone.
    @Test func theMethodsThatChangeWhoAUserIsNeedItsOwner() {
        let changingWhoAUserIs: [Method] = [
            .linkCredentials, .unlinkIdentity, .deleteUser, .createAPIKey, .listAPIKeys, .deleteAPIKey, .loginWait,
            .resetPassword,
        ]
        for method in changingWhoAUserIs {
            #expect(MethodHandler.for(method).owner != .none, "\(method.rawValue)")
        }
    }
}
