import UsherProtocol

extension LineConnection {
    /// A new connection (from `connect`) on which `method` was answered, for tests of a short idle timeout.
    ///
    /// On a loaded machine the timeout may pass between the connect and the server reading the first request; the
    /// server then rightly closes the connection as idle. That is not what such a test is about, so it tries again
    /// with a new connection (hang guard: a minute). The connection's own reads get the same minute.
    package static func established(
        _ connect: () async throws -> LineConnection,
        _ method: String,
        _ params: [String: JSONValue]? = nil
    ) async throws -> LineConnection {
        let deadline = ContinuousClock.now + .seconds(60)
        while true {
            let connection = try await connect()
            connection.timeout = .seconds(60)
            if (try? await connection.result(method, params)) != nil { return connection }
            guard ContinuousClock.now < deadline else {
                throw TestSupportError("no connection got an answer to \(method) within a minute")
            }
        }
    }
}
