import TOMLKit

/// A configuration error: names the file and the key, so a person can fix it without reading code.
package struct ConfigurationError: Error, CustomStringConvertible, Equatable {
    package var file: String
    package var key: String?
    package var message: String

    package var description: String {
        if let key { return "\(self.file): \(key): \(self.message)" }
        return "\(self.file): \(self.message)"
    }
}

/// A parsed TOML document, independent of TOMLKit's reference types.
indirect enum ConfigValue: Sendable {
    case table([String: ConfigValue])
    case array([ConfigValue])
    case string(String)
    case int(Int)
    case double(Double)
    case bool(Bool)
    case other(String)

    init(_ value: any TOMLValueConvertible) {
        switch value.type {
        case .table:
            let table = value.table!
            self = .table(Dictionary(uniqueKeysWithValues: table.keys.map { ($0, ConfigValue(table[$0]!)) }))
        case .array:
            self = .array(value.array!.map { ConfigValue($0) })
        case .string: self = .string(value.string!)
        case .int: self = .int(value.int!)
        case .double: self = .double(value.double!)
        case .bool: self = .bool(value.bool!)
        default: self = .other(value.type.rawValue)
        }
    }

    var typeName: String {
        switch self {
        case .table: "a table"
        case .array: "an array"
        case .string: "a string"
        case .int: "an integer"
        case .double: "a number"
        case .bool: "a boolean"
        case .other(let name): "a \(name)"
        }
    }
}

/// Reads one table of the configuration, remembering which keys were read so that `finish` can reject the rest.
struct ConfigSection {
    let file: String
    /// The dotted path of this table (`daemon`, `providers.local`).
    let path: String
    let values: [String: ConfigValue]
    private var consumed: Set<String> = []

    init(file: String, path: String, values: [String: ConfigValue]) {
        self.file = file
        self.path = path
        self.values = values
    }

    static func parse(_ text: String, file: String) throws(ConfigurationError) -> ConfigSection {
        let table: TOMLTable
        do {
            table = try TOMLTable(string: text)
        } catch let error as TOMLParseError {
            throw ConfigurationError(
                file: file,
                key: nil,
                message: "not valid TOML (line \(error.source.begin.line)): \(error.description)"
            )
        } catch {
            throw ConfigurationError(file: file, key: nil, message: "not valid TOML")
        }
        guard case .table(let values) = ConfigValue(table) else {
            throw ConfigurationError(file: file, key: nil, message: "not a TOML table")
        }
        return ConfigSection(file: file, path: "", values: values)
    }

    func key(_ name: String) -> String { self.path.isEmpty ? name : "\(self.path).\(name)" }

    func error(_ name: String?, _ message: String) -> ConfigurationError {
        ConfigurationError(
            file: self.file,
            key: name.map(self.key) ?? (self.path.isEmpty ? nil : self.path),
            message: message
        )
    }

    private mutating func take(_ name: String) -> ConfigValue? {
        self.consumed.insert(name)
        return self.values[name]
    }

    mutating func string(_ name: String) throws(ConfigurationError) -> String? {
        guard let value = self.take(name) else { return nil }
        guard case .string(let string) = value else {
            throw self.error(name, "must be a string, not \(value.typeName)")
        }
        return string
    }

    mutating func bool(_ name: String) throws(ConfigurationError) -> Bool? {
        guard let value = self.take(name) else { return nil }
        guard case .bool(let bool) = value else {
            throw self.error(name, "must be true or false, not \(value.typeName)")
        }
        return bool
    }

    mutating func int(_ name: String, in range: ClosedRange<Int>) throws(ConfigurationError) -> Int? {
        guard let value = self.take(name) else { return nil }
        guard case .int(let int) = value else { throw self.error(name, "must be an integer, not \(value.typeName)") }
        guard range.contains(int) else {
            throw self.error(name, "must be between \(range.lowerBound) and \(range.upperBound), not \(int)")
        }
        return int
    }

    /// A duration string (`"500ms"`, `"30s"`, `"5m"`, `"12h"`, `"60d"`) in milliseconds.
    mutating func duration(_ name: String, in range: ClosedRange<Int64>) throws(ConfigurationError) -> Int64? {
        guard let text = try self.string(name) else { return nil }
        guard let milliseconds = DurationText.milliseconds(parsing: text) else {
            throw self.error(
                name,
                "must be a duration such as \"500ms\", \"30s\", \"5m\", \"12h\" or \"60d\", not \"\(text)\""
            )
        }
        guard range.contains(milliseconds) else {
            throw self.error(
                name,
                "must be between \(DurationText.format(range.lowerBound)) and \(DurationText.format(range.upperBound))"
            )
        }
        return milliseconds
    }

    mutating func stringArray(_ name: String) throws(ConfigurationError) -> [String]? {
        guard let value = self.take(name) else { return nil }
        guard case .array(let elements) = value else {
            throw self.error(name, "must be an array of strings, not \(value.typeName)")
        }
        var strings: [String] = []
        for element in elements {
            guard case .string(let string) = element else {
                throw self.error(name, "must be an array of strings, but holds \(element.typeName)")
            }
            strings.append(string)
        }
        return strings
    }

    mutating func section(_ name: String) throws(ConfigurationError) -> ConfigSection? {
        guard let value = self.take(name) else { return nil }
        guard case .table(let values) = value else { throw self.error(name, "must be a table, not \(value.typeName)") }
        return ConfigSection(file: self.file, path: self.key(name), values: values)
    }

    /// An array of tables (`[[access.rule]]`), each read as a section of its own (`access.rule[1]`).
    mutating func tables(_ name: String) throws(ConfigurationError) -> [ConfigSection] {
        guard let value = self.take(name) else { return [] }
        guard case .array(let elements) = value else {
            throw self.error(name, "must be an array of tables ([[\(self.key(name))]]), not \(value.typeName)")
        }
        var sections: [ConfigSection] = []
        for (index, element) in elements.enumerated() {
            guard case .table(let values) = element else {
                throw self.error(name, "must be an array of tables ([[\(self.key(name))]])")
            }
            sections.append(ConfigSection(file: self.file, path: "\(self.key(name))[\(index + 1)]", values: values))
        }
        return sections
    }

    /// The names of the sub-tables, for sections such as `[providers.NAME]`.
    var keys: [String] { self.values.keys.sorted() }

    /// Rejects every key that was not read.
    func finish() throws(ConfigurationError) {
        if let unknown = self.values.keys.filter({ !self.consumed.contains($0) }).sorted().first {
            throw ConfigurationError(file: self.file, key: self.key(unknown), message: "unknown key")
        }
    }
}

enum DurationText {
    /// Parses `<integer><unit>` with unit `ms`, `s`, `m`, `h` or `d`.
    static func milliseconds(parsing text: String) -> Int64? {
        let units: [(String, Int64)] = [("ms", 1), ("s", 1000), ("m", 60_000), ("h", 3_600_000), ("d", 86_400_000)]
        for (suffix, factor) in units where text.hasSuffix(suffix) {
            let number = text.dropLast(suffix.count)
            guard !number.isEmpty, number.allSatisfy(\.isASCII), number.allSatisfy(\.isNumber),
                let value = Int64(number)
            else { continue }
            let (product, overflow) = value.multipliedReportingOverflow(by: factor)
            return overflow ? nil : product
        }
        return nil
    }

    static func format(_ milliseconds: Int64) -> String {
        for (suffix, factor) in [("d", Int64(86_400_000)), ("h", 3_600_000), ("m", 60_000), ("s", 1000)]
        where milliseconds >= factor && milliseconds % factor == 0 {
            return "\(milliseconds / factor)\(suffix)"
        }
        return "\(milliseconds)ms"
    }
}
