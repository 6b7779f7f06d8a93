import Logging
import Synchronization
import UsherCore
import UsherHTTP
import UsherProtocol

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Where a verifier gets its public keys: a JWK set (RFC 7517) in a file, at a URL, or given directly.
///
/// Keys are loaded on first use and cached. A token whose `kid` is not in the cache makes the source load the set
/// again (a key rotation): a file every time, a URL at most once per `refetchInterval`, so a stream of tokens with
/// made-up key IDs cannot turn into a stream of requests to the key server. A URL's set is also fetched again once it
/// is older than `maximumAge`, so a key the publisher withdrew stops being trusted. When loading fails the cached keys
/// keep serving; only with nothing cached is the failure reported (`keysUnavailable`).
///
/// Concurrent loads are shared: while one is in flight, other callers wait for its result instead of starting
/// their own.
package final class JWKSSource: Sendable {
    private enum Origin: Sendable {
        case fixed
        case file(path: String)
        case url(String, httpClient: HTTPTransport, timeout: Duration, logger: Logger)
    }

    private enum LoadResult: Sendable {
        case loaded([JWK])
        case failed(String)
    }

    private struct State {
        /// nil until the first successful load.
        var keys: [JWK]?
        var loadedAt: ContinuousClock.Instant?
        /// When an unknown `kid` last caused a fetch from the URL.
        var lastRefetch: ContinuousClock.Instant?
        /// When the last load began, successful or not.
        var lastAttempt: ContinuousClock.Instant?
        var loading = false
        /// Callers waiting for the load in flight.
        var waiters: [CheckedContinuation<LoadResult?, Never>] = []
    }

    /// The largest key set accepted, from a file or a URL.
    static let maximumSetBytes = 1 << 20

    private let origin: Origin
    private let refetchInterval: Duration
    private let maximumAge: Duration
    private let state: Mutex<State>

    private init(origin: Origin, keys: [JWK]?, refetchInterval: Duration, maximumAge: Duration) {
        self.origin = origin
        self.refetchInterval = refetchInterval
        self.maximumAge = maximumAge
        self.state = Mutex(State(keys: keys, loadedAt: keys == nil ? nil : .now))
    }

    /// Keys read from a JWK set file: lazily on first use, and again whenever a token names a `kid` it lacks.
    package static func file(path: String) -> JWKSSource {
        JWKSSource(origin: .file(path: path), keys: nil, refetchInterval: .zero, maximumAge: .seconds(Int64.max))
    }

    /// Keys fetched from a JWK set URL: on first use, again when a token names an unknown `kid` (at most once per
    /// 30 s), and again after an hour. The URL must be `https`, except on a loopback host.
    ///
    /// - Parameters:
    ///   - httpClient: the daemon's shared client; it must outlive the source.
    ///   - timeout: the whole fetch, connection to last byte.
    ///   - logger: failed fetches are logged here (at warning).
    package static func url(
        _ url: String,
        httpClient: HTTPTransport,
        timeout: Duration,
        logger: Logger
    ) -> JWKSSource {
        Self.url(url, httpClient: httpClient, timeout: timeout, logger: logger, refetchInterval: .seconds(30))
    }

    /// `url(_:httpClient:timeout:logger:)` with another refetch interval, for tests.
    static func url(
        _ url: String,
        httpClient: HTTPTransport,
        timeout: Duration,
        logger: Logger,
        refetchInterval: Duration,
        maximumAge: Duration = .seconds(3600)
    ) -> JWKSSource {
        JWKSSource(
            origin: .url(url, httpClient: httpClient, timeout: timeout, logger: logger),
            keys: nil,
            refetchInterval: refetchInterval,
            maximumAge: maximumAge
        )
    }

    /// A fixed set of keys, never reloaded.
    package static func fixed(_ keys: [JWK]) -> JWKSSource {
        JWKSSource(origin: .fixed, keys: keys, refetchInterval: .zero, maximumAge: .seconds(Int64.max))
    }

    /// Why `url` cannot be a JWK set URL, or nil when it can: it must be an absolute `https` URL, or `http` on a
    /// loopback host (`127.0.0.0/8`, `::1`, `localhost`), since keys fetched in the clear could be anyone's.
    package static func problem(withURL url: String) -> String? {
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(), let host = parsed.host,
            !host.isEmpty
        else { return "is not an absolute URL" }
        switch scheme {
        case "https": return nil
        case "http": return Self.isLoopback(host) ? nil : "must use https (plain http only on a loopback host)"
        default: return "must be an https URL"
        }
    }

    private static func isLoopback(_ host: String) -> Bool {
        let host = host.lowercased().trimming { $0 == "[" || $0 == "]" }
        if host == "localhost" || host == "::1" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }

    // MARK: Keys

    /// The keys with ID `keyID` (every key when nil), loading or reloading the set as described above.
    ///
    /// - Throws: `JWTError.unknownKey` when no key matches even after a reload, `.keysUnavailable` when the set
    ///   cannot be loaded and nothing is cached.
    func keys(withID keyID: String?) async throws(JWTError) -> [JWK] {
        enum Plan {
            case use([JWK])
            case load
            case unknown
        }
        let now = ContinuousClock.now
        let plan = self.state.withLock { state -> Plan in
            guard let keys = state.keys else { return .load }
            let matching = Self.keys(keys, withID: keyID)
            // A stale set is fetched again, but after a failed attempt not before `refetchInterval` has passed:
            // while the key server is down, logins go on with the cached keys instead of each waiting for a timeout.
            if case .url = self.origin, let loadedAt = state.loadedAt, now - loadedAt >= self.maximumAge,
                state.lastAttempt.map({ now - $0 >= self.refetchInterval }) ?? true
            {
                return .load
            }
            if !matching.isEmpty { return .use(matching) }
            switch self.origin {
            case .fixed:
                return .unknown
            case .file:
                return .load
            case .url:
                if let last = state.lastRefetch, now - last < self.refetchInterval { return .unknown }
                state.lastRefetch = now
                return .load
            }
        }
        switch plan {
        case .use(let keys):
            return keys
        case .unknown:
            throw .unknownKey(Self.describe(keyID))
        case .load:
            break
        }
        // Suspension: another caller may have loaded meanwhile; the result below is whatever the load produced, and
        // the cache is read again afterwards.
        let result = await self.load()
        let cached = self.state.withLock { $0.keys }
        switch result {
        case .loaded(let keys):
            let matching = Self.keys(keys, withID: keyID)
            guard !matching.isEmpty else { throw .unknownKey(Self.describe(keyID)) }
            return matching
        case .failed(let reason):
            guard let cached else { throw .keysUnavailable(reason) }
            let matching = Self.keys(cached, withID: keyID)
            guard !matching.isEmpty else { throw .unknownKey(Self.describe(keyID)) }
            return matching
        }
    }

    private static func keys(_ keys: [JWK], withID keyID: String?) -> [JWK] {
        guard let keyID else { return keys }
        return keys.filter { $0.kid == keyID }
    }

    private static func describe(_ keyID: String?) -> String {
        keyID.map { "no key with kid \(JWTError.quoted($0))" } ?? "the token names no kid and no key fits"
    }

    /// Loads the set, or waits for the load already in flight; stores a loaded set in the cache.
    private func load() async -> LoadResult {
        let shared = await withCheckedContinuation { (continuation: CheckedContinuation<LoadResult?, Never>) in
            let leads = self.state.withLock { state -> Bool in
                if state.loading {
                    state.waiters.append(continuation)
                    return false
                }
                state.loading = true
                state.lastAttempt = .now
                return true
            }
            if leads { continuation.resume(returning: nil) }
        }
        if let shared { return shared }
        let result = await self.read()
        let waiters = self.state.withLock { state in
            if case .loaded(let keys) = result {
                state.keys = keys
                state.loadedAt = .now
            }
            state.loading = false
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: result) }
        return result
    }

    /// Reads the set from its origin.
    private func read() async -> LoadResult {
        switch self.origin {
        case .fixed:
            return .loaded(self.state.withLock { $0.keys } ?? [])
        case .file(let path):
            guard let data = FileManager.default.contents(atPath: path) else {
                return .failed("cannot read the key file \(path)")
            }
            guard data.count <= Self.maximumSetBytes else {
                return .failed("the key file \(path) is larger than \(Self.maximumSetBytes) bytes")
            }
            guard let keys = Self.parseSet(data) else { return .failed("the key file \(path) is not a JWK set") }
            return .loaded(keys)
        case .url(let url, let httpClient, let timeout, let logger):
            return await Self.fetch(url, httpClient: httpClient, timeout: timeout, logger: logger)
        }
    }

    private static func fetch(
        _ url: String,
        httpClient: HTTPTransport,
        timeout: Duration,
        logger: Logger
    ) async -> LoadResult {
        if let problem = Self.problem(withURL: url) { return .failed("the JWK set URL \(problem)") }
        let request = HTTPRequest(.get, url, headers: [(name: "Accept", value: "application/json")])
        let response: HTTPResponse
        do {
            response = try await httpClient.send(request, timeout: timeout, maximumBodyBytes: Self.maximumSetBytes)
        } catch {
            logger.warning("cannot fetch the JWK set", metadata: ["jwks.url": "\(url)", "error": "\(error)"])
            return .failed("\(url) cannot be fetched")
        }
        guard response.status == 200 else {
            logger.warning(
                "cannot fetch the JWK set",
                metadata: ["jwks.url": "\(url)", "http.status": "\(response.status)"]
            )
            return .failed("\(url) answered HTTP \(response.status)")
        }
        guard let keys = Self.parseSet(Data(response.body)) else {
            logger.warning("the JWK set URL did not answer a JWK set", metadata: ["jwks.url": "\(url)"])
            return .failed("\(url) did not answer a JWK set")
        }
        logger.debug("fetched the JWK set", metadata: ["jwks.url": "\(url)", "jwks.keys": "\(keys.count)"])
        return .loaded(keys)
    }

    /// The keys of a JWK set: `{"keys": [...]}`. Members other than the ones `JWK` holds are ignored, and so are
    /// entries that are not objects with a string `kty`, so one odd key does not hide the others.
    ///
    /// Not jwt-kit's `JWKS`: decoding one fails as a whole when a single key has a `kty` or `alg` jwt-kit does not
    /// know (an `oct` key, `RSA-OAEP-256`), its `JWK` has no `use` (so an encryption key would verify signatures),
    /// and its key collection needs a `kid` on every key and keeps one key per `kid`. usher reads the set itself and
    /// hands jwt-kit one key at a time (`JWSAlgorithm.verifier(for:)`).
    static func parseSet(_ data: Data) -> [JWK]? {
        guard case .object(let set)? = try? JSONDecoder().decode(JSONValue.self, from: data),
            case .array(let entries)? = set["keys"]
        else { return nil }
        return entries.compactMap { entry -> JWK? in
            guard case .object(let members) = entry, let kty = members["kty"]?.stringValue else { return nil }
            return JWK(
                kty: kty,
                kid: members["kid"]?.stringValue,
                use: members["use"]?.stringValue,
                alg: members["alg"]?.stringValue,
                crv: members["crv"]?.stringValue,
                x: members["x"]?.stringValue,
                y: members["y"]?.stringValue,
                n: members["n"]?.stringValue,
                e: members["e"]?.stringValue
            )
        }
    }
}
