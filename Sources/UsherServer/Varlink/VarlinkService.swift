import UsherProtocol

/// `org.varlink.service`, which every Varlink service implements: what the service is (`GetInfo`) and the
/// definitions of its interfaces (`GetInterfaceDescription`), and the errors the specification defines for calls
/// that name no method of the service or pass parameters it cannot take.
enum VarlinkService {
    static let name = "org.varlink.service"

    static let interfaceNotFound = "org.varlink.service.InterfaceNotFound"
    static let methodNotFound = "org.varlink.service.MethodNotFound"
    static let invalidParameter = "org.varlink.service.InvalidParameter"
    static let expectedMore = "org.varlink.service.ExpectedMore"

    /// The interface as the specification (UAPI.20) gives it.
    static let description = """
        # The Varlink Service Interface is provided by every varlink service. It
        # describes the service and the interfaces it implements.
        interface org.varlink.service

        # Get a list of all the interfaces a service provides and information
        # about the implementation.
        method GetInfo() -> (
          vendor: string,
          product: string,
          version: string,
          url: string,
          interfaces: []string
        )

        # Get the description of an interface that is implemented by this service.
        method GetInterfaceDescription(interface: string) -> (description: string)

        # The requested interface was not found.
        error InterfaceNotFound (interface: string)

        # The requested method was not found
        error MethodNotFound (method: string)

        # The interface defines the requested method, but the service does not
        # implement it.
        error MethodNotImplemented (method: string)

        # One of the passed parameters is invalid.
        error InvalidParameter (parameter: string)

        # Client is denied access
        error PermissionDenied ()

        # Method is expected to be called with 'more' set to true, but wasn't
        error ExpectedMore ()

        """

    /// The interfaces this service implements, with their definitions.
    static let interfaces: [(name: String, description: String)] = [
        (Self.name, Self.description),
        (SessionInterface.name, SessionInterface.description),
    ]

    /// The reply to a call of `org.varlink.service` (no permission needed: it tells only what the definitions say).
    static func answer(
        _ call: VarlinkCall,
        version: String,
        interfaces: [(name: String, description: String)] = Self.interfaces
    ) -> [UInt8] {
        switch call.member {
        case "GetInfo":
            return VarlinkReply.parameters([
                "vendor": "usher",
                "product": "usherd",
                "version": .string(version),
                "url": "man:usherd(8)",
                "interfaces": .array(interfaces.map { .string($0.name) }),
            ])
        case "GetInterfaceDescription":
            let requested: String
            do {
                requested = try ParamsDecoder(call.decodeParameters()).string("interface")
            } catch {
                return VarlinkReply.error(Self.invalidParameter, ["parameter": "interface"])
            }
            guard let found = interfaces.first(where: { $0.name == requested }) else {
                return VarlinkReply.error(Self.interfaceNotFound, ["interface": .string(requested)])
            }
            return VarlinkReply.parameters(["description": .string(found.description)])
        default:
            return VarlinkReply.error(Self.methodNotFound, ["method": .string(call.method)])
        }
    }
}
