import UsherProtocol

/// The `io.usher.Session` Varlink interface: its definition (`varlink/io.usher.Session.varlink`, embedded at build
/// time), and the names of its methods and errors, each derived from the protocol's own by one rule, so that a new
/// method or error code has its Varlink name without a table to keep: `current_user` is `CurrentUser`,
/// `user_not_found` is `io.usher.Session.UserNotFound`. (A test checks that the definition declares every method
/// and error code, and nothing else.)
enum SessionInterface {
    static let name = "io.usher.Session"

    /// The interface definition, as served by `org.varlink.service.GetInterfaceDescription`.
    static let description = sessionInterfaceDescription

    /// The protocol method of each Varlink method name (`CurrentUser`).
    static let methods: [String: Method] = Dictionary(
        uniqueKeysWithValues: Method.allCases.map { (Self.camelCase($0.rawValue), $0) }
    )

    /// The Varlink name of a method: `CurrentUser` for `current_user`.
    static func member(of method: Method) -> String { Self.camelCase(method.rawValue) }

    /// The qualified Varlink error name of an error code: `io.usher.Session.UserNotFound` for `user_not_found`.
    static func errorName(_ code: ErrorCode) -> String { Self.name + "." + Self.camelCase(code.rawValue) }

    /// `snake_case` to `CamelCase`.
    static func camelCase(_ name: String) -> String {
        name.split(separator: "_").map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
    }
}
