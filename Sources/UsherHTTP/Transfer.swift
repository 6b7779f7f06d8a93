import CCurl

/// One request in flight: its libcurl easy handle, what the handle's callbacks collect, and the waiting task.
///
/// Everything here but `id` is touched only by the transport's thread, after the request was handed to it; that is
/// what makes it `@unchecked Sendable`.
final class Transfer: @unchecked Sendable {
    typealias Completion = CheckedContinuation<Result<HTTPResponse, HTTPTransportError>, Never>

    let id: UInt64
    private let request: HTTPRequest
    private let timeoutMilliseconds: Int
    private let maximumBodyBytes: Int
    private var completion: Completion?

    private(set) var easy: UnsafeMutableRawPointer?
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))
    private var body: [UInt8] = []
    private var headers: [(name: String, value: String)] = []
    private var bodyTooLarge = false

    init(
        id: UInt64,
        request: HTTPRequest,
        timeoutMilliseconds: Int,
        maximumBodyBytes: Int,
        completion: Completion
    ) {
        self.id = id
        self.request = request
        self.timeoutMilliseconds = timeoutMilliseconds
        self.maximumBodyBytes = maximumBodyBytes
        self.completion = completion
        self.errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
    }

    deinit {
        self.release()
        self.errorBuffer.deallocate()
    }

    /// Creates and configures the easy handle; nil when libcurl refused an option (out of memory, an unknown one).
    func makeHandle(connectTimeoutMilliseconds: Int, userAgent: String) -> UnsafeMutableRawPointer? {
        guard let easy = usher_curl_easy_init() else { return nil }
        self.easy = easy
        let https = self.request.url.lowercased().hasPrefix("https:")
        var ok = true
        func set(_ code: CURLcode) { ok = ok && code == CURLE_OK }
        set(usher_curl_setopt_string(easy, CURLOPT_URL, self.request.url))
        // Never SIGALRM for name resolution: the daemon has other threads.
        set(usher_curl_setopt_long(easy, CURLOPT_NOSIGNAL, 1))
        set(usher_curl_setopt_string(easy, CURLOPT_PROTOCOLS_STR, "http,https"))
        // A redirect never goes from https to plain http.
        set(usher_curl_setopt_string(easy, CURLOPT_REDIR_PROTOCOLS_STR, https ? "https" : "http,https"))
        // Only a GET follows redirects: a form carries codes and secrets, and is not sent anywhere else. Nor does a GET
        // that proves a token (`followsRedirects`): libcurl would not send its Authorization on to another host, so
        // that host's 200 would prove nothing.
        set(usher_curl_setopt_long(easy, CURLOPT_FOLLOWLOCATION, self.request.followsRedirects ? 1 : 0))
        set(usher_curl_setopt_long(easy, CURLOPT_MAXREDIRS, 5))
        set(usher_curl_setopt_long(easy, CURLOPT_TIMEOUT_MS, self.timeoutMilliseconds))
        set(
            usher_curl_setopt_long(
                easy,
                CURLOPT_CONNECTTIMEOUT_MS,
                min(connectTimeoutMilliseconds, self.timeoutMilliseconds)
            )
        )
        set(usher_curl_setopt_string(easy, CURLOPT_USERAGENT, userAgent))
        switch self.request.method {
        case .get:
            set(usher_curl_setopt_long(easy, CURLOPT_HTTPGET, 1))
        case .post:
            set(usher_curl_setopt_long(easy, CURLOPT_POSTFIELDSIZE, self.request.body.count))
            // COPYPOSTFIELDS copies the body now; the request may be gone by the time libcurl sends it.
            if self.request.body.isEmpty {
                set(usher_curl_setopt_string(easy, CURLOPT_COPYPOSTFIELDS, ""))
            } else {
                self.request.body.withUnsafeBytes { bytes in
                    set(
                        usher_curl_setopt_pointer(
                            easy,
                            CURLOPT_COPYPOSTFIELDS,
                            UnsafeMutableRawPointer(mutating: bytes.baseAddress)
                        )
                    )
                }
            }
        case .delete:
            set(usher_curl_setopt_string(easy, CURLOPT_CUSTOMREQUEST, "DELETE"))
        }
        // No `Expect: 100-continue` round trip before a POST's body.
        var list = usher_curl_slist_append(nil, "Expect:")
        for header in self.request.headers where !header.name.contains(":") {
            list = usher_curl_slist_append(list, "\(header.name): \(Self.oneLine(header.value))")
        }
        self.headerList = list
        set(usher_curl_setopt_slist(easy, CURLOPT_HTTPHEADER, list))
        set(usher_curl_setopt_pointer(easy, CURLOPT_ERRORBUFFER, self.errorBuffer))
        let context = Unmanaged.passUnretained(self).toOpaque()
        set(usher_curl_setopt_write_function(easy, CURLOPT_WRITEFUNCTION, Self.receiveBody))
        set(usher_curl_setopt_pointer(easy, CURLOPT_WRITEDATA, context))
        set(usher_curl_setopt_write_function(easy, CURLOPT_HEADERFUNCTION, Self.receiveHeader))
        set(usher_curl_setopt_pointer(easy, CURLOPT_HEADERDATA, context))
        return ok ? easy : nil
    }

    /// Hands the outcome to the waiting task, once; later calls do nothing.
    func complete(_ result: Result<HTTPResponse, HTTPTransportError>) {
        guard let completion = self.completion else { return }
        self.completion = nil
        completion.resume(returning: result)
    }

    /// The outcome of a finished transfer, from libcurl's result code.
    func outcome(_ code: CURLcode) -> Result<HTTPResponse, HTTPTransportError> {
        var status = 0
        if let easy = self.easy { _ = usher_curl_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status) }
        guard code == CURLE_OK else { return .failure(self.error(code)) }
        if (300..<400).contains(status), !self.request.followsRedirects {
            return .failure(.redirected(status: status))
        }
        return .success(HTTPResponse(status: status, headers: self.headers, body: self.body))
    }

    private func error(_ code: CURLcode) -> HTTPTransportError {
        if self.bodyTooLarge { return .tooLarge(limit: self.maximumBodyBytes) }
        let detail =
            self.errorBuffer[0] != 0
            ? String(cString: self.errorBuffer) : String(cString: usher_curl_easy_strerror(code))
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY, CURLE_COULDNT_CONNECT:
            return .unreachable(detail)
        case CURLE_OPERATION_TIMEDOUT:
            return .timedOut(detail)
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH,
            CURLE_SSL_INVALIDCERTSTATUS:
            return .tls(detail)
        default:
            return .failed(detail)
        }
    }

    /// Frees the handle and its header list (the transport has taken the handle out of its multi handle first).
    func release() {
        if let easy = self.easy { usher_curl_easy_cleanup(easy) }
        self.easy = nil
        usher_curl_slist_free_all(self.headerList)
        self.headerList = nil
    }

    /// A header value on one line: a line break in it would start another header.
    private static func oneLine(_ value: String) -> String {
        String(value.map { $0 == "\r" || $0 == "\n" ? " " : $0 })
    }

    private static let receiveBody: curl_write_callback = { data, size, count, context in
        guard let context else { return 0 }
        let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
        let length = size * count
        guard transfer.body.count + length <= transfer.maximumBodyBytes else {
            transfer.bodyTooLarge = true
            return 0
        }
        if length > 0, let data { transfer.body.append(contentsOf: UnsafeRawBufferPointer(start: data, count: length)) }
        return length
    }

    private static let receiveHeader: curl_write_callback = { data, size, count, context in
        guard let context else { return 0 }
        let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
        let length = size * count
        guard length > 0, let data else { return length }
        let line = String(decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self)[...]
            .trimmingSuffix { $0.isNewline }
        if line.hasPrefix("HTTP/") {
            // The status line of another response (after a redirect or a 100 Continue): its headers start afresh.
            transfer.headers.removeAll()
        } else if let colon = line.firstIndex(of: ":") {
            let name = String(line[..<colon])
            let value = line[line.index(after: colon)...].trimmingPrefix { $0 == " " || $0 == "\t" }
            transfer.headers.append((name: name, value: String(value.trimmingSuffix { $0 == " " || $0 == "\t" })))
        }
        return length
    }
}

extension Substring {
    fileprivate func trimmingSuffix(while predicate: (Character) -> Bool) -> Substring {
        var end = self.endIndex
        while end > self.startIndex, predicate(self[self.index(before: end)]) { end = self.index(before: end) }
        return self[self.startIndex..<end]
    }
}
