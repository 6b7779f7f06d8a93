/// Writes the Swift declarations of an interface: the `Method` enum, the error codes, every type the interface
/// declares, and each method's request and result types, with the interface's comments as their documentation.
///
/// The generated code is plain: stored properties, a memberwise initializer, `CodingKeys` for the wire's snake_case,
/// and for requests `init(params:)` and `params` written out field by field over `ParamsDecoder` and `ParamsEncoder`
/// (no reflection, no `Decoder` on the hot path). What the interface cannot say (ranges, lengths, defaults, fields
/// that depend on each other) is the request's hand-written `validate()` and extensions.
struct SwiftEmitter {
    let interface: Interface
    private var lines: [String] = []
    /// Each method's result type, or the method whose identical result it shares.
    private var resultOwners: [String: String] = [:]

    init(_ interface: Interface) {
        self.interface = interface
    }

    mutating func emit() -> String {
        self.line("// Generated from varlink/\(self.interface.name).varlink by UsherInterfaceGenerator: do not edit.")
        self.line("// The interface file is the source; change it, and the hand-written extensions beside these types.")
        self.line("")
        self.emitMethods()
        self.emitErrors()
        for declaration in self.interface.types where !SwiftNames.handWritten.contains(declaration.name) {
            self.emitType(declaration)
        }
        var sharedEnums: Set<String> = []
        for method in self.interface.methods {
            for field in method.input + method.output {
                self.collectSharedEnums(field.type, into: &sharedEnums)
            }
        }
        for declaration in self.interface.types where !SwiftNames.handWritten.contains(declaration.name) {
            if case .structure(let fields) = declaration.body {
                for field in fields { self.collectSharedEnums(field.type, into: &sharedEnums) }
            }
        }
        for (key, name) in SwiftNames.sharedEnums.sorted(by: { $0.value < $1.value }) where sharedEnums.contains(key) {
            let values = key.split(separator: ",").map { EnumValue(name: String($0), documentation: []) }
            self.emitEnum(name: name, values: values, documentation: [], indent: "")
        }
        for method in self.interface.methods {
            self.emitRequest(method)
        }
        return self.lines.joined(separator: "\n") + "\n"
    }

    /// The server's `MethodHandler.for(_:)`: each method's handler is the static `MethodHandler` named as its `Method`
    /// case, declared in its own file of Sources/UsherServer/Methods. Exhaustive, with no `default`: a method of the
    /// interface without a handler does not compile. And the interface's text (`source`), byte for byte, which the
    /// server answers `GetInterfaceDescription` with.
    mutating func emitMethodTable(source: String) -> String {
        self.line("// Generated from varlink/\(self.interface.name).varlink by UsherInterfaceGenerator: do not edit.")
        self.line("import UsherProtocol")
        self.line("")
        self.line("extension MethodHandler {")
        self.line("    /// The handler of a method: `Methods/<Method>.swift` declares it.")
        self.line("    package static func `for`(_ method: Method) -> MethodHandler {")
        self.line("        switch method {")
        for method in self.interface.methods {
            let name = SwiftNames.lowerCamel(method.name)
            self.line("        case .\(name): .\(name)")
        }
        self.line("        }")
        self.line("    }")
        self.line("}")
        self.line("")
        // A raw string with one more `#` than any run of them after a quote in the text, so that no text ends it.
        var delimiter = "#"
        while source.contains("\"" + delimiter) { delimiter += "#" }
        self.line("/// The interface definition, as the file holds it.")
        self.line("package let sessionInterfaceDescription = \(delimiter)\"\"\"")
        self.lines.append(contentsOf: source.split(separator: "\n", omittingEmptySubsequences: false).map(String.init))
        self.line("\"\"\"\(delimiter)")
        return self.lines.joined(separator: "\n") + "\n"
    }

    // MARK: - the method and error enums

    private mutating func emitMethods() {
        self.line(
            "/// Every method of the interface, by its name on the newline-delimited socket (`rawValue`) and on Varlink."
        )
        self.line("public enum Method: String, Sendable, Hashable, CaseIterable, Codable {")
        for method in self.interface.methods {
            self.documentation(method.documentation, indent: "    ")
            let name = SwiftNames.lowerCamel(method.name)
            let wire = SwiftNames.snakeCase(method.name)
            self.line(name == wire ? "    case \(name)" : "    case \(name) = \"\(wire)\"")
        }
        self.line("")
        self.line("    /// The method's name in the Varlink interface (`CurrentUser`).")
        self.line("    public var varlinkName: String {")
        self.line("        switch self {")
        for method in self.interface.methods {
            self.line("        case .\(SwiftNames.lowerCamel(method.name)): \"\(method.name)\"")
        }
        self.line("        }")
        self.line("    }")
        self.line("")
        self.line("    /// The interface's qualified name (`\(self.interface.name)`).")
        self.line("    public static let interfaceName = \"\(self.interface.name)\"")
        self.line("}")
        self.line("")
    }

    private mutating func emitErrors() {
        self.line("extension ErrorCode {")
        for error in self.interface.errors {
            self.documentation(error.documentation, indent: "    ")
            let name = SwiftNames.property(SwiftNames.lowerCamel(error.name))
            self.line("    public static let \(name) = ErrorCode(\"\(SwiftNames.snakeCase(error.name))\")")
        }
        self.line("")
        self.line("    /// The interface's errors, in its order; each is `\(self.interface.name).<Name>` on Varlink.")
        self.line("    public static let interfaceErrors: [ErrorCode] = [")
        for error in self.interface.errors {
            self.line("        .\(SwiftNames.property(SwiftNames.lowerCamel(error.name))),")
        }
        self.line("    ]")
        self.line("")
        self.line(
            "    /// The error's name in the Varlink interface (`UserNotFound`); nil for a code the interface does not declare."
        )
        self.line("    public var varlinkName: String? {")
        self.line("        switch self.rawValue {")
        for error in self.interface.errors {
            self.line("        case \"\(SwiftNames.snakeCase(error.name))\": \"\(error.name)\"")
        }
        self.line("        default: nil")
        self.line("        }")
        self.line("    }")
        self.line("}")
        self.line("")
    }

    // MARK: - types

    private mutating func emitType(_ declaration: TypeDeclaration) {
        let name = Self.swiftName(declaration.name)
        switch declaration.body {
        case .enumeration(let values):
            self.emitEnum(name: name, values: values, documentation: declaration.documentation, indent: "")
        case .structure(let fields):
            self.emitStruct(name: name, fields: fields, documentation: declaration.documentation, indent: "")
        default:
            break
        }
    }

    private mutating func emitEnum(name: String, values: [EnumValue], documentation: [String], indent: String) {
        self.documentation(documentation, indent: indent)
        self.line("\(indent)public enum \(name): String, Sendable, Hashable, Codable, CaseIterable {")
        for value in values {
            self.documentation(value.documentation, indent: indent + "    ")
            let swift = SwiftNames.property(SwiftNames.lowerCamel(value.name))
            self.line(
                swift == value.name ? "\(indent)    case \(swift)" : "\(indent)    case \(swift) = \"\(value.name)\""
            )
        }
        self.line("\(indent)}")
        self.line("")
    }

    /// A struct of plain values: what results and the interface's types are.
    private mutating func emitStruct(
        name: String,
        fields: [Field],
        documentation: [String],
        indent: String,
        conformances: String = "Sendable, Hashable, Codable",
        body: (inout SwiftEmitter) -> Void = { _ in }
    ) {
        self.documentation(documentation, indent: indent)
        self.line("\(indent)public struct \(name): \(conformances) {")
        let inner = indent + "    "
        body(&self)
        for field in fields {
            self.documentation(field.documentation, indent: inner)
            self.line("\(inner)public var \(SwiftNames.property(field.name)): \(self.swiftType(field))")
        }
        if !fields.isEmpty { self.line("") }
        let arguments = fields.map { field in
            let type = self.swiftType(field)
            return "\(SwiftNames.property(field.name)): \(type)\(type.hasSuffix("?") ? " = nil" : "")"
        }
        self.line("\(inner)public init(\(arguments.joined(separator: ", "))) {")
        for field in fields {
            let property = SwiftNames.lowerCamel(field.name)
            self.line("\(inner)    self.\(property) = \(SwiftNames.property(field.name))")
        }
        self.line("\(inner)}")
        self.emitCodingKeys(fields, indent: inner)
        for field in fields {
            if case .enumeration(let values) = field.type.unwrapped, self.sharedEnumName(values) == nil {
                self.line("")
                self.emitEnum(name: SwiftNames.upperCamel(field.name), values: values, documentation: [], indent: inner)
                _ = self.lines.popLast()
            }
        }
        self.line("\(indent)}")
        self.line("")
    }

    private mutating func emitCodingKeys(_ fields: [Field], indent: String) {
        guard !fields.isEmpty else { return }
        self.line("")
        self.line("\(indent)enum CodingKeys: String, CodingKey {")
        for field in fields {
            let swift = SwiftNames.property(field.name)
            self.line(
                swift == field.name ? "\(indent)    case \(swift)" : "\(indent)    case \(swift) = \"\(field.name)\""
            )
        }
        self.line("\(indent)}")
    }

    // MARK: - requests and results

    private mutating func emitRequest(_ method: MethodDeclaration) {
        let name = SwiftNames.upperCamel(method.name) + "Request"
        let wire = SwiftNames.snakeCase(method.name)
        let documentation = ["`\(wire)`" + (method.documentation.isEmpty ? "." : ":")] + method.documentation
        let resultOwner = self.sharedResultOwner(of: method)
        self.emitStruct(
            name: name,
            fields: method.input,
            documentation: documentation,
            indent: "",
            conformances: "UsherRequest, Codable, Hashable"
        ) { emitter in
            emitter.line("    public static let method = Method.\(SwiftNames.lowerCamel(method.name))")
            if let resultOwner {
                emitter.line("    /// The same result as `\(SwiftNames.snakeCase(resultOwner))`'s.")
                emitter.line("    public typealias Result = \(SwiftNames.upperCamel(resultOwner))Request.Result")
            }
            emitter.line("")
        }
        // The decoding and encoding of the parameters, then the result, in an extension of their own.
        self.line("extension \(name) {")
        self.line("    public init(params: Params) throws(ResponseError) {")
        if method.input.isEmpty {
            self.line("        self.init()")
        } else {
            self.line("        let decoder = ParamsDecoder(params)")
            for field in method.input {
                let property = SwiftNames.lowerCamel(field.name)
                self.line("        self.\(property) = try \(self.decodeExpression(field))")
            }
        }
        self.line("        try self.validate(params)")
        self.line("    }")
        self.line("")
        self.line("    public var params: Params {")
        if method.input.isEmpty {
            self.line("        Params()")
        } else {
            self.line("        var encoder = ParamsEncoder()")
            for field in method.input {
                self.line("        encoder.encode(\"\(field.name)\", self.\(SwiftNames.lowerCamel(field.name)))")
            }
            self.line("        return encoder.params")
        }
        self.line("    }")
        self.line("}")
        self.line("")
        if resultOwner == nil {
            self.line("extension \(name) {")
            self.emitStruct(
                name: "Result",
                fields: method.output,
                documentation: ["What `\(wire)` answers."],
                indent: "    "
            )
            _ = self.lines.popLast()
            self.line("}")
            self.line("")
        }
    }

    /// The earlier method whose result has exactly these fields, if any: the two share one result type (`login` and
    /// `switch_user` both answer `{generation, user, seat}`).
    private mutating func sharedResultOwner(of method: MethodDeclaration) -> String? {
        let key = method.output.map { "\($0.name):\($0.type)" }.joined(separator: ",")
        if let owner = self.resultOwners[key] { return owner }
        self.resultOwners[key] = method.name
        return nil
    }

    private func decodeExpression(_ field: Field) -> String {
        let optional = field.type.isOptional
        let key = "\"\(field.name)\""
        func call(_ name: String, _ extra: String = "") -> String {
            let function = optional ? "optional" + name.prefix(1).uppercased() + name.dropFirst() : name
            return "decoder.\(function)(\(key)\(extra))"
        }
        switch field.type.unwrapped {
        case .string: return call("string")
        case .int: return call("int")
        case .bool: return call("bool")
        case .float: return call("double")
        case .object: return call("object")
        case .named(let name) where Self.swiftName(name) == "[String: JSONValue]": return call("object")
        case .array(.string): return call("stringArray")
        case .enumeration(let values):
            return call("enumeration", ", as: \(self.enumName(values, field: field)).self")
        case .named(let name) where self.isEnum(name):
            return call("enumeration", ", as: \(Self.swiftName(name)).self")
        case .array(.named(let name)) where self.isEnum(name):
            let noun = name.hasSuffix("Name") ? String(name.dropLast(4)).lowercased() : name.lowercased()
            return call("enumerationArray", ", as: \(Self.swiftName(name)).self, noun: \"\(noun)\"")
        default:
            fatalError("the parameter \(field.name) has a type ParamsDecoder cannot decode: \(field.type)")
        }
    }

    // MARK: - Swift types

    private func swiftType(_ field: Field) -> String {
        self.swiftType(field.type, field: field)
    }

    private func swiftType(_ type: TypeReference, field: Field) -> String {
        switch type {
        case .string: Self.isTime(field.name) ? "Timestamp" : "String"
        case .int: "Int64"
        case .bool: "Bool"
        case .float: "Double"
        case .object: "[String: JSONValue]"
        case .named(let name): Self.swiftName(name)
        case .optional(let wrapped): self.swiftType(wrapped, field: field) + "?"
        case .array(let element): "[\(self.swiftType(element, field: field))]"
        case .dictionary(let value): "[String: \(self.swiftType(value, field: field))]"
        case .enumeration(let values): self.enumName(values, field: field)
        case .structure: fatalError("\(field.name): an inline struct needs a named type in the interface")
        }
    }

    private func enumName(_ values: [EnumValue], field: Field) -> String {
        self.sharedEnumName(values) ?? SwiftNames.upperCamel(field.name)
    }

    private func sharedEnumName(_ values: [EnumValue]) -> String? {
        SwiftNames.sharedEnums[values.map(\.name).joined(separator: ",")]
    }

    private func collectSharedEnums(_ type: TypeReference, into keys: inout Set<String>) {
        switch type {
        case .optional(let wrapped), .array(let wrapped), .dictionary(let wrapped):
            self.collectSharedEnums(wrapped, into: &keys)
        case .enumeration(let values):
            let key = values.map(\.name).joined(separator: ",")
            if SwiftNames.sharedEnums[key] != nil { keys.insert(key) }
        default:
            break
        }
    }

    private func isEnum(_ name: String) -> Bool {
        self.interface.types.contains { declaration in
            guard declaration.name == name, case .enumeration = declaration.body else { return false }
            return true
        }
    }

    private static func swiftName(_ name: String) -> String {
        SwiftNames.swiftTypes[name] ?? name
    }

    /// Times are RFC 3339 strings on the wire and `Timestamp` in Swift: the fields named for a moment.
    private static func isTime(_ name: String) -> Bool {
        name.hasSuffix("_at") || name == "since" || name == "deadline"
    }

    // MARK: - writing

    private mutating func documentation(_ lines: [String], indent: String) {
        for text in lines {
            self.line(text.isEmpty ? "\(indent)///" : "\(indent)/// \(text)")
        }
    }

    private mutating func line(_ text: String) {
        self.lines.append(text)
    }
}

extension TypeReference {
    var isOptional: Bool {
        if case .optional = self { return true }
        return false
    }

    /// The type without its `?`.
    var unwrapped: TypeReference {
        if case .optional(let wrapped) = self { return wrapped }
        return self
    }
}
