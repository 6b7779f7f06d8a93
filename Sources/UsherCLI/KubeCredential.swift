import ArgumentParser
import UsherClient

// JSONDecoder: FoundationEssentials, never Foundation (see Output).
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension Usher {
    /// A kubectl exec credential plugin (client.authentication.k8s.io): kubectl runs it with `KUBERNETES_EXEC_INFO`
    /// in its environment and reads an `ExecCredential` with the token from stdout.
    struct KubeCredential: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "kube-credential",
            abstract: "Print an ExecCredential with the access token (a kubectl exec credential plugin).",
            discussion: """
                kubectl runs it (see usher setup-kube): it answers in the API version kubectl asks for in \
                KUBERNETES_EXEC_INFO (client.authentication.k8s.io/v1beta1 or v1; v1beta1 without it), with the \
                token and its expirationTimestamp, so that kubectl runs it again only when the token expires. \
                With nobody logged in it prints nothing on stdout, says why on stderr and exits 4 (1 for other \
                failures): kubectl then fails the request and shows the message.
                """
        )

        @OptionGroup var options: GlobalOptions
        @OptionGroup var token: TokenOptions

        static let apiVersions = ["client.authentication.k8s.io/v1beta1", "client.authentication.k8s.io/v1"]

        func run() throws {
            let apiVersion = try Self.apiVersion(from: getenv("KUBERNETES_EXEC_INFO").map { String(cString: $0) })
            let connection = try BlockingConnection(to: self.options.location)
            let (token, _) = try self.token.token(on: connection)
            let credential: JSONValue = [
                "apiVersion": .string(apiVersion),
                "kind": "ExecCredential",
                "status": [
                    "token": .string(token.accessToken),
                    "expirationTimestamp": .string(token.expiresAt.rfc3339),
                ],
            ]
            Output.json(credential)
        }

        /// The API version kubectl asked for, from `KUBERNETES_EXEC_INFO` (v1beta1 without one, as kubectl before 1.22
        /// sets none for v1beta1 plugins).
        static func apiVersion(from info: String?) throws -> String {
            guard let info, !info.isEmpty else { return Self.apiVersions[0] }
            guard case .object(let object)? = try? JSONDecoder().decode(JSONValue.self, from: Data(info.utf8)),
                let version = object["apiVersion"]?.stringValue
            else { throw CLIError("KUBERNETES_EXEC_INFO is not an ExecCredential with an apiVersion") }
            guard Self.apiVersions.contains(version) else {
                throw CLIError(
                    "kubectl asked for \(version); usher answers "
                        + Self.apiVersions.joined(separator: " and ")
                )
            }
            return version
        }
    }
}
