import UsherProtocol

/// The `io.usher.Session` Varlink interface: its definition (`varlink/io.usher.Session.varlink`, embedded at build
/// time), served as it is, and the names of its methods and errors, which the code generated from that same file gives
/// (`Method.varlinkName`, `ErrorCode.varlinkName`): `current_user` is `CurrentUser`, `user_not_found` is
/// `io.usher.Session.UserNotFound`.
enum SessionInterface {
    static let name = Method.interfaceName

    /// The interface definition, as served by `org.varlink.service.GetInterfaceDescription`.
    static let description = sessionInterfaceDescription

    /// The protocol method of each Varlink method name (`CurrentUser`).
    static let methods: [String: Method] = Dictionary(
        uniqueKeysWithValues: Method.allCases.map { ($0.varlinkName, $0) }
    )

    /// The qualified Varlink error name of an error code: `io.usher.Session.UserNotFound` for `user_not_found`. A code
    /// the interface does not declare (none is sent on this socket) is `Internal`.
    static func errorName(_ code: ErrorCode) -> String { Self.name + "." + (code.varlinkName ?? "Internal") }
}
