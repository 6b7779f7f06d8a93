import ArgumentParser
import UsherClient

// JSONDecoder: FoundationEssentials, never Foundation (see Output).
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Usher {
    struct Call: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "call",
            abstract: "Send any request and print its JSON result.",
            discussion: #"Example: usher call access_token '{"min_valid": 300}'"#
        )

        @OptionGroup var options: GlobalOptions

        @Argument(help: "The method, e.g. status or list_users.")
        var method: String

        @Argument(help: "The params, a JSON object (default: none).")
        var params: String?

        func validate() throws {
            _ = try self.parsedParams()
        }

        private func parsedParams() throws -> [String: JSONValue] {
            guard let params = self.params else { return [:] }
            let value: JSONValue
            do {
                value = try JSONDecoder().decode(JSONValue.self, from: Data(params.utf8))
            } catch {
                throw ValidationError("The params are not valid JSON.")
            }
            guard case .object(let object) = value else {
                throw ValidationError("The params must be a JSON object, not \(value.typeName).")
            }
            return object
        }

        func run() async throws {
            let params = try self.parsedParams()
            try await self.options.withSession { session in
                Output.json(try await session.client.call(method: self.method, params: params))
            }
        }
    }
}
