/// Reads a request's parameters into typed values: the one place a wire parameter is checked, for every request.
///
/// The generated `init(params:)` of each request (varlink/io.usher.Session.varlink) calls it field by field, and the
/// user database's queries do too. Every failure is `invalid_params` with the message the golden tests pin
/// (`params.email is required`, `params.limit must be an integer, not string`) and the parameter's name in
/// `ResponseError.parameter`, which the Varlink face answers as `org.varlink.service.InvalidParameter`'s `parameter`.
/// `null` is the same as absent.
public struct ParamsDecoder: Sendable {
    public let params: Params

    public init(_ params: Params) {
        self.params = params
    }

    /// The failure for parameter `key`.
    public static func invalid(_ key: String, _ message: String) -> ResponseError {
        var error = ResponseError(.invalidParams, message)
        error.parameter = key
        return error
    }

    private static func wrongType(_ key: String, _ expected: String, _ value: JSONValue) -> ResponseError {
        Self.invalid(key, "params.\(key) must be \(expected), not \(value.typeName)")
    }

    private static func missing(_ key: String) -> ResponseError {
        Self.invalid(key, "params.\(key) is required")
    }

    private func present(_ key: String) -> JSONValue? {
        switch self.params.values[key] {
        case .none, .some(.null): nil
        case .some(let value): value
        }
    }

    // MARK: - strings

    public func optionalString(_ key: String) throws(ResponseError) -> String? {
        guard let value = self.present(key) else { return nil }
        guard case .string(let string) = value else { throw Self.wrongType(key, "a string", value) }
        return string
    }

    public func string(_ key: String) throws(ResponseError) -> String {
        guard let value = try self.optionalString(key) else { throw Self.missing(key) }
        return value
    }

    // MARK: - numbers

    /// An integer: JSON's integers, and numbers written with a fraction or exponent that are whole and exact.
    public func optionalInt(_ key: String) throws(ResponseError) -> Int64? {
        guard let value = self.present(key) else { return nil }
        switch value {
        case .int(let value): return value
        case .double(let value) where value.rounded() == value && abs(value) < 9e15: return Int64(value)
        default: throw Self.wrongType(key, "an integer", value)
        }
    }

    public func int(_ key: String) throws(ResponseError) -> Int64 {
        guard let value = try self.optionalInt(key) else { throw Self.missing(key) }
        return value
    }

    /// An integer in `range` (the user database's ids, and requests' `validate()` through `check`).
    public func optionalInt(_ key: String, in range: ClosedRange<Int64>) throws(ResponseError) -> Int64? {
        guard let value = try self.optionalInt(key) else { return nil }
        try Self.check(value, in: range, key)
        return value
    }

    /// `value` of parameter `key` is in `range`, else `params.KEY must be between LOW and HIGH`.
    public static func check(_ value: Int64?, in range: ClosedRange<Int64>, _ key: String) throws(ResponseError) {
        guard let value, !range.contains(value) else { return }
        throw Self.invalid(key, "params.\(key) must be between \(range.lowerBound) and \(range.upperBound)")
    }

    public func optionalDouble(_ key: String) throws(ResponseError) -> Double? {
        guard let value = self.present(key) else { return nil }
        switch value {
        case .int(let value): return Double(value)
        case .double(let value): return value
        default: throw Self.wrongType(key, "a number", value)
        }
    }

    public func double(_ key: String) throws(ResponseError) -> Double {
        guard let value = try self.optionalDouble(key) else { throw Self.missing(key) }
        return value
    }

    // MARK: - booleans, objects, arrays

    public func optionalBool(_ key: String) throws(ResponseError) -> Bool? {
        guard let value = self.present(key) else { return nil }
        guard case .bool(let bool) = value else { throw Self.wrongType(key, "a boolean", value) }
        return bool
    }

    public func bool(_ key: String) throws(ResponseError) -> Bool {
        guard let value = try self.optionalBool(key) else { throw Self.missing(key) }
        return value
    }

    public func optionalObject(_ key: String) throws(ResponseError) -> [String: JSONValue]? {
        guard let value = self.present(key) else { return nil }
        guard case .object(let object) = value else { throw Self.wrongType(key, "an object", value) }
        return object
    }

    public func object(_ key: String) throws(ResponseError) -> [String: JSONValue] {
        guard let value = try self.optionalObject(key) else { throw Self.missing(key) }
        return value
    }

    public func optionalStringArray(_ key: String) throws(ResponseError) -> [String]? {
        guard let value = self.present(key) else { return nil }
        guard case .array(let elements) = value else { throw Self.wrongType(key, "an array of strings", value) }
        var strings: [String] = []
        strings.reserveCapacity(elements.count)
        for element in elements {
            guard case .string(let string) = element else { throw Self.wrongType(key, "an array of strings", element) }
            strings.append(string)
        }
        return strings
    }

    public func stringArray(_ key: String) throws(ResponseError) -> [String] {
        guard let value = try self.optionalStringArray(key) else { throw Self.missing(key) }
        return value
    }

    // MARK: - enums

    /// One of the enum's values: else `params.mode must be "block" or "delay"`.
    public func optionalEnumeration<Value: RawRepresentable & CaseIterable>(
        _ key: String,
        as type: Value.Type
    ) throws(ResponseError) -> Value? where Value.RawValue == String {
        guard let text = try self.optionalString(key) else { return nil }
        guard let value = Value(rawValue: text) else {
            let names = Value.allCases.map { "\"\($0.rawValue)\"" }
            let list = names.count > 1 ? names.dropLast().joined(separator: ", ") + " or " + names.last! : names[0]
            throw Self.invalid(key, "params.\(key) must be \(list)")
        }
        return value
    }

    public func enumeration<Value: RawRepresentable & CaseIterable>(
        _ key: String,
        as type: Value.Type
    ) throws(ResponseError) -> Value where Value.RawValue == String {
        guard let value = try self.optionalEnumeration(key, as: type) else { throw Self.missing(key) }
        return value
    }

    /// An array of the enum's values: else `params.events: unknown event "x"` (`noun`: what one value is).
    public func optionalEnumerationArray<Value: RawRepresentable>(
        _ key: String,
        as type: Value.Type,
        noun: String
    ) throws(ResponseError) -> [Value]? where Value.RawValue == String {
        guard let names = try self.optionalStringArray(key) else { return nil }
        var values: [Value] = []
        values.reserveCapacity(names.count)
        for name in names {
            guard let value = Value(rawValue: name) else {
                throw Self.invalid(key, "params.\(key): unknown \(noun) \"\(name)\"")
            }
            values.append(value)
        }
        return values
    }

    public func enumerationArray<Value: RawRepresentable>(
        _ key: String,
        as type: Value.Type,
        noun: String
    ) throws(ResponseError) -> [Value] where Value.RawValue == String {
        guard let values = try self.optionalEnumerationArray(key, as: type, noun: noun) else { throw Self.missing(key) }
        return values
    }
}

/// Writes a request's parameters: the generated `params` of each request, the inverse of `ParamsDecoder`. An absent
/// optional (nil) is not written.
public struct ParamsEncoder: Sendable {
    public private(set) var params = Params()

    public init() {}

    public mutating func encode(_ key: String, _ value: String?) {
        if let value { self.params.values[key] = .string(value) }
    }

    public mutating func encode(_ key: String, _ value: Int64?) {
        if let value { self.params.values[key] = .int(value) }
    }

    public mutating func encode(_ key: String, _ value: Double?) {
        if let value { self.params.values[key] = .double(value) }
    }

    public mutating func encode(_ key: String, _ value: Bool?) {
        if let value { self.params.values[key] = .bool(value) }
    }

    public mutating func encode(_ key: String, _ value: [String: JSONValue]?) {
        if let value { self.params.values[key] = .object(value) }
    }

    public mutating func encode(_ key: String, _ value: [String]?) {
        if let value { self.params.values[key] = .array(value.map(JSONValue.string)) }
    }

    public mutating func encode<Value: RawRepresentable>(_ key: String, _ value: Value?)
    where Value.RawValue == String {
        if let value { self.params.values[key] = .string(value.rawValue) }
    }

    public mutating func encode<Value: RawRepresentable>(_ key: String, _ value: [Value]?)
    where Value.RawValue == String {
        if let value { self.params.values[key] = .array(value.map { .string($0.rawValue) }) }
    }
}
