import CCurl
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The daemon's HTTP client for identity providers, over libcurl (the system's, as Debian ships it).
///
/// One thread drives every request through one libcurl multi handle: requests run concurrently, connections to a
/// provider are kept and reused, and a waiting task costs no thread. TLS is libcurl's (OpenSSL with the system's
/// certificate authorities); the standard proxy variables (`https_proxy`, `no_proxy`, ...) in the daemon's environment
/// are honoured. libcurl is loaded, and the thread started, by the first request: a daemon that never asks a provider
/// anything over HTTP carries neither.
///
/// Why libcurl and not AsyncHTTPClient, which usher used before: issue 25. AsyncHTTPClient brought HTTP/2, a second
/// copy of BoringSSL (swift-nio-ssl's, beside swift-crypto's), swift-algorithms, swift-configuration and
/// swift-distributed-tracing into usherd, about 6 MB of its binary, for a few requests a minute.
public final class HTTPTransport: Sendable {
    private let loop: Loop

    /// - Parameters:
    ///   - connectTimeout: the longest a connection may take to set up (within a request's own time limit).
    ///   - userAgent: the `User-Agent` header.
    public init(connectTimeout: Duration = .seconds(10), userAgent: String = "usherd") {
        self.loop = Loop(connectTimeoutMilliseconds: Self.milliseconds(connectTimeout), userAgent: userAgent)
    }

    deinit {
        self.loop.stop()
    }

    /// One transport for callers that have none of their own; it lives as long as the process.
    public static let shared = HTTPTransport()

    /// Sends `request` and waits for its answer: at most `timeout` in all, redirects included; a body longer than
    /// `maximumBodyBytes` fails the request. Cancelling the waiting task aborts the request.
    public func send(
        _ request: HTTPRequest,
        timeout: Duration,
        maximumBodyBytes: Int
    ) async throws(HTTPTransportError) -> HTTPResponse {
        let id = self.loop.reserveID()
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { completion in
                self.loop.submit(
                    Transfer(
                        id: id,
                        request: request,
                        timeoutMilliseconds: Self.milliseconds(timeout),
                        maximumBodyBytes: maximumBodyBytes,
                        completion: completion
                    )
                )
            }
        } onCancel: {
            self.loop.cancel(id)
        }
        return try result.get()
    }

    /// Fails every request still waiting with `shutDown` and ends the thread; later requests fail at once.
    public func shutdown() {
        self.loop.stop()
    }

    /// Whole milliseconds, rounded up, from 1 to about 24 days (libcurl's limits are `long`s of milliseconds).
    private static func milliseconds(_ duration: Duration) -> Int {
        Int(min(max((duration / .milliseconds(1)).rounded(.up), 1), Double(Int32.max)))
    }
}

/// The thread and its multi handle. The thread holds the loop until it ends, so the transport may go away first.
private final class Loop: Sendable {
    private enum Phase {
        /// The caller has an id and has not handed the transfer over yet.
        case reserved
        /// Cancelled before it was handed over: it is failed when it is.
        case cancelledEarly
        /// With the thread.
        case submitted
    }

    private struct Shared: ~Copyable {
        var nextID: UInt64 = 1
        var phases: [UInt64: Phase] = [:]
        var submissions: [Transfer] = []
        var cancellations: [UInt64] = []
        var started = false
        var stopping = false
        /// What a request fails with once `stopping`: `shutDown`, or `unavailable` with why libcurl cannot be loaded.
        var refusal = HTTPTransportError.shutDown
        /// Set by the thread once libcurl is loaded. `curl_multi_wakeup` may be called from any thread (under this
        /// lock); everything else on the handle, only from the thread.
        var multi: MultiHandle?
    }

    /// The multi handle, handed from the thread to the lock.
    private struct MultiHandle: @unchecked Sendable {
        let raw: UnsafeMutableRawPointer
    }

    private let connectTimeoutMilliseconds: Int
    private let userAgent: String
    private let shared = Mutex(Shared())

    init(connectTimeoutMilliseconds: Int, userAgent: String) {
        self.connectTimeoutMilliseconds = connectTimeoutMilliseconds
        self.userAgent = userAgent
    }

    deinit {
        // Only now: until the transport and the thread have both let go, another thread may still call `wake()`.
        if let multi = self.shared.withLock({ $0.multi }) { _ = usher_curl_multi_cleanup(multi.raw) }
    }

    /// Starts the thread (the first request does).
    private func start() {
        var thread = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        let created = pthread_create(
            &thread,
            nil,
            { context in
                let loop = Unmanaged<Loop>.fromOpaque(context!).takeRetainedValue()
                loop.run()
                return nil
            },
            context
        )
        if created == 0 {
            pthread_detach(thread)
        } else {
            Unmanaged<Loop>.fromOpaque(context).release()
            self.failLateSubmissions(with: .unavailable("cannot start the HTTP thread (error \(created))"))
        }
    }

    func reserveID() -> UInt64 {
        self.shared.withLock { shared in
            let id = shared.nextID
            shared.nextID += 1
            shared.phases[id] = .reserved
            return id
        }
    }

    func submit(_ transfer: Transfer) {
        enum Next {
            case refuse(HTTPTransportError)
            case start
            case wake
        }
        let next: Next = self.shared.withLock { shared in
            if shared.stopping {
                shared.phases[transfer.id] = nil
                return .refuse(shared.refusal)
            }
            if shared.phases[transfer.id] == .cancelledEarly {
                shared.phases[transfer.id] = nil
                return .refuse(.cancelled)
            }
            shared.phases[transfer.id] = .submitted
            shared.submissions.append(transfer)
            defer { shared.started = true }
            return shared.started ? .wake : .start
        }
        switch next {
        case .refuse(let error): transfer.complete(.failure(error))
        case .start: self.start()
        case .wake: self.wake()
        }
    }

    func cancel(_ id: UInt64) {
        let wake = self.shared.withLock { shared -> Bool in
            switch shared.phases[id] {
            case .reserved?:
                shared.phases[id] = .cancelledEarly
                return false
            case .submitted?:
                shared.cancellations.append(id)
                return true
            case .cancelledEarly?, nil:
                return false
            }
        }
        if wake { self.wake() }
    }

    func stop() {
        let first = self.shared.withLock { shared -> Bool in
            defer { shared.stopping = true }
            return !shared.stopping
        }
        if first { self.wake() }
    }

    private func wake() {
        self.shared.withLock { shared in
            if let multi = shared.multi { _ = usher_curl_multi_wakeup(multi.raw) }
        }
    }

    /// The thread: takes new requests and cancellations, lets libcurl move every transfer on, completes the finished
    /// ones, and sleeps in `curl_multi_poll` until a socket is ready, a libcurl timer is due, or `wake()`.
    private func run() {
        guard usher_curl_load() == 0 else {
            self.failLateSubmissions(with: .unavailable(String(cString: usher_curl_load_error())))
            return
        }
        guard let multi = usher_curl_multi_init() else {
            self.failLateSubmissions(with: .unavailable("libcurl cannot make a multi handle"))
            return
        }
        let handle = MultiHandle(raw: multi)
        self.shared.withLock { $0.multi = handle }
        /// The transfers in the multi handle, by their easy handle (how libcurl names a finished one).
        var active: [UnsafeMutableRawPointer: Transfer] = [:]
        func finish(_ transfer: Transfer, _ result: Result<HTTPResponse, HTTPTransportError>) {
            if let easy = transfer.easy {
                _ = usher_curl_multi_remove_handle(multi, easy)
                active[easy] = nil
            }
            transfer.release()
            self.shared.withLock { _ = $0.phases.removeValue(forKey: transfer.id) }
            transfer.complete(result)
        }
        while true {
            let (submissions, cancellations, stopping) = self.shared.withLock { shared in
                defer {
                    shared.submissions.removeAll()
                    shared.cancellations.removeAll()
                }
                return (shared.submissions, shared.cancellations, shared.stopping)
            }
            for transfer in submissions {
                guard
                    let easy = transfer.makeHandle(
                        connectTimeoutMilliseconds: self.connectTimeoutMilliseconds,
                        userAgent: self.userAgent
                    ), usher_curl_multi_add_handle(multi, easy) == CURLM_OK
                else {
                    finish(transfer, .failure(.failed("libcurl refused the request")))
                    continue
                }
                active[easy] = transfer
            }
            // Cancellations are rare (refreshes run on tasks no caller cancels): a search, not a second index.
            for id in cancellations {
                if let transfer = active.values.first(where: { $0.id == id }) { finish(transfer, .failure(.cancelled)) }
            }
            if stopping {
                for transfer in active.values { finish(transfer, .failure(.shutDown)) }
                self.failLateSubmissions(with: .shutDown)
                return
            }
            var running: Int32 = 0
            _ = usher_curl_multi_perform(multi, &running)
            var left: Int32 = 0
            while let message = usher_curl_multi_info_read(multi, &left) {
                guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle,
                    let transfer = active[easy]
                else { continue }
                finish(transfer, transfer.outcome(message.pointee.data.result))
            }
            // libcurl shortens the wait to its own next timer (a request's time limit among them).
            _ = usher_curl_multi_poll(multi, 60_000)
        }
    }

    /// As the thread ends (libcurl cannot be loaded, or the transport is shut down): from now on every request fails
    /// at once, and so does what was handed over since the thread last looked.
    private func failLateSubmissions(with error: HTTPTransportError) {
        let late = self.shared.withLock { shared in
            defer {
                shared.stopping = true
                shared.refusal = error
                shared.submissions.removeAll()
                shared.phases.removeAll()
            }
            return shared.submissions
        }
        for transfer in late { transfer.complete(.failure(error)) }
    }
}
