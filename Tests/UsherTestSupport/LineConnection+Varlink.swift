import Foundation
import UsherProtocol

extension LineConnection {
    /// Sends one Varlink call (its message and the NUL after it).
    package func sendVarlink(_ method: String, _ parameters: [String: JSONValue] = [:], more: Bool = false) throws {
        var call: [String: JSONValue] = ["method": .string(method), "parameters": .object(parameters)]
        if more { call["more"] = true }
        try self.send(raw: Array(try JSONEncoder().encode(JSONValue.object(call))) + [0])
    }

    /// The next Varlink message the daemon sent; nil when it closed the connection.
    package func readVarlink() async throws -> [String: JSONValue]? {
        guard let message = try await self.readMessage(terminator: 0) else { return nil }
        guard case .object(let object) = try JSONDecoder().decode(JSONValue.self, from: Data(message.utf8)) else {
            throw TestSupportError("not a JSON object: \(message)")
        }
        return object
    }

    /// Calls a Varlink method and returns its reply (parameters or error, as sent).
    package func varlink(_ method: String, _ parameters: [String: JSONValue] = [:]) async throws -> [String: JSONValue]
    {
        try self.sendVarlink(method, parameters)
        guard let reply = try await self.readVarlink() else { throw TestSupportError("no reply to \(method)") }
        return reply
    }
}
