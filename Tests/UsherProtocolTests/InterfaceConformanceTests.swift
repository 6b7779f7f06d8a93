import Testing
import UsherProtocol

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The interface file (varlink/io.usher.Session.varlink) is the source of the protocol's methods, errors and types:
/// the generated code follows it, and the types the generator leaves to hand-written Swift (`UserInfo`) are checked
/// against it here, field by field.
@Suite("Interface conformance")
struct InterfaceConformanceTests {
    /// The interface file's text.
    static let interface: String = {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../varlink/io.usher.Session.varlink").path
        return (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }()

    /// The names after `keyword` at the start of a line (`method`, `error`), in the file's order.
    static func declared(_ keyword: String) -> [String] {
        Self.interface.split(separator: "\n").compactMap { line in
            guard line.hasPrefix(keyword + " ") else { return nil }
            return String(line.dropFirst(keyword.count + 1).prefix { $0.isLetter || $0.isNumber })
        }
    }

    /// The field names of `type NAME (...)`.
    static func fields(of type: String) -> Set<String> {
        guard let start = Self.interface.range(of: "type \(type) (\n") else { return [] }
        var names: Set<String> = []
        for line in Self.interface[start.upperBound...].split(separator: "\n") {
            if line == ")" { break }
            let trimmed = line.drop { $0 == " " }
            guard !trimmed.hasPrefix("#"), let colon = trimmed.firstIndex(of: ":") else { continue }
            names.insert(String(trimmed[..<colon]))
        }
        return names
    }

    static func snakeCase(_ name: String) -> String {
        var result = ""
        for character in name {
            if character.isUppercase, !result.isEmpty { result.append("_") }
            result.append(Character(character.lowercased()))
        }
        return result
    }

    @Test func theFileIsRead() {
        #expect(Self.interface.hasPrefix("# usherd"))
    }

    @Test func everyMethodOfTheFileIsAMethodOnBothSockets() {
        let methods = Self.declared("method")
        #expect(methods.count == Method.allCases.count)
        #expect(Method.allCases.map(\.varlinkName) == methods)
        #expect(Method.allCases.map(\.rawValue) == methods.map(Self.snakeCase))
    }

    @Test func everyErrorOfTheFileIsAnErrorCode() {
        let errors = Self.declared("error")
        #expect(ErrorCode.interfaceErrors.map(\.rawValue) == errors.map(Self.snakeCase))
        #expect(ErrorCode.interfaceErrors.compactMap(\.varlinkName) == errors)
        #expect(Set(ErrorCode.all) == Set(ErrorCode.interfaceErrors + [.unknownMethod, .invalidParams]))
        #expect(ErrorCode.unknownMethod.varlinkName == nil && ErrorCode.invalidParams.varlinkName == nil)
    }

    /// `UserInfo` is written by hand (`WireWriter` writes it on the hot path): a user with every field set encodes
    /// exactly the interface's `User` fields, and a bare one only those.
    @Test func theHandWrittenUserHasTheInterfacesFields() throws {
        let user = Self.fields(of: "User")
        #expect(user.count > 10)
        let full = try JSONDecoder().decode(JSONValue.self, from: JSONEncoder().encode(Fixtures.fullUser))
        let bare = try JSONDecoder().decode(JSONValue.self, from: JSONEncoder().encode(Fixtures.bareUser))
        guard case .object(let fullObject) = full, case .object(let bareObject) = bare else {
            Issue.record("a user does not encode as an object")
            return
        }
        #expect(Set(fullObject.keys) == user)
        #expect(Set(bareObject.keys).isSubset(of: user))
        let profile = Self.fields(of: "Profile")
        guard case .object(let claims)? = fullObject["profile"] else {
            Issue.record("the full user has no profile")
            return
        }
        #expect(Set(claims.keys).isSubset(of: profile))
    }
}
