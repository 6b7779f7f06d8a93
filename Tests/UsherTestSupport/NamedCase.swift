import UsherProtocol

/// One case of a parameterised test, shown in the test's results by its name instead of by its position in an
/// array (`@Test(arguments: 0..<cases.count)` reports `0`, `1`, … and a failure says nothing about which case it was).
///
/// ```swift
/// static let failures: [(String, Reply, ProviderError)] = [("bare 401", …), …]
///
/// @Test(arguments: NamedCase.cases(Self.failures, named: \.0))
/// func failuresBecomeErrors(_ failure: NamedCase<(String, Reply, ProviderError)>) async throws {
///     let (name, reply, expected) = failure.value
/// ```
package struct NamedCase<Value: Sendable>: Sendable, CustomStringConvertible, Identifiable {
    /// How the case is shown in the results.
    package let name: String
    /// The case's values.
    package let value: Value

    package init(_ name: String, _ value: Value) {
        self.name = name
        self.value = value
    }

    package var description: String { self.name }

    /// The name, so that one case can be run again on its own.
    package var id: String { self.name }

    /// `values`, each named by `name`.
    package static func cases(_ values: [Value], named name: (Value) -> String) -> [NamedCase] {
        values.map { NamedCase(name($0), $0) }
    }
}

extension JSONValue {
    /// `value` as JSON text, for a case's name (`"true"` and `true` read apart); `absent` for nil.
    package static func label(_ value: JSONValue?) -> String {
        guard let value else { return "absent" }
        return String(decoding: LineCodec.line(value).dropLast(), as: UTF8.self)
    }
}
