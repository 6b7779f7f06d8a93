import Logging
import UsherCore
import UsherHTTP
import UsherProtocol

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Why a request to the provider did not produce a usable answer.
///
/// Messages name the endpoint's host and what went wrong; they never hold a request's form fields (codes, tokens,
/// secrets) or a response body beyond the provider's `error` and `error_description`.
enum OIDCFailure: Error, Sendable, Equatable {
    /// The provider could not be reached or failed transiently: network error, timeout, TLS failure, HTTP 5xx or 429.
    case unavailable(String)
    /// The provider answered with an OAuth error response (`error`, `error_description`), or a bare 4xx.
    case oauth(status: Int, error: String?, description: String?)
    /// The provider answered with something that is not a valid answer (malformed JSON, a missing member).
    case invalid(String)

    /// The form in which a login request reports it.
    var providerError: ProviderError {
        switch self {
        case .unavailable(let message):
            return .unavailable(message)
        case .oauth(let status, let error, let description):
            switch error {
            case "invalid_grant"?:
                return .invalidCredentials(
                    description.map { "the provider rejected the grant: \($0)" }
                        ?? "the provider rejected the grant (invalid_grant)"
                )
            case "access_denied"?:
                return .accessDenied(description ?? "the login was declined at the provider")
            case "expired_token"?:
                return .expiredToken(description ?? "the code expired before the login was approved")
            case let error?:
                return .providerError(error: error, description: description)
            case nil:
                return .providerError(error: "http_\(status)", description: description)
            }
        case .invalid(let message):
            return .providerError(error: "invalid_response", description: message)
        }
    }

    /// A short description for logs and `refresh_failed` events.
    var summary: String {
        switch self {
        case .unavailable(let message): message
        case .oauth(let status, let error, let description):
            "HTTP \(status)" + (error.map { " \($0)" } ?? "") + (description.map { ": \($0)" } ?? "")
        case .invalid(let message): "invalid answer: \(message)"
        }
    }
}

/// The requests usher makes to an OpenID provider: JSON GETs and form POSTs through the daemon's shared HTTP transport,
/// each bounded by the provider's `request_timeout` and a size limit on the answer.
struct OIDCHTTP: Sendable {
    let client: HTTPTransport
    let timeout: Duration
    let logger: Logger

    /// Provider answers (discovery documents, token responses, userinfo) are a few kilobytes; more is refused.
    static let maximumBodyBytes = 1 << 20

    struct Response: Sendable {
        var status: Int
        var contentType: String?
        var body: [UInt8]
        /// The `DPoP-Nonce` header: the nonce a server wants in the next DPoP proof (RFC 9449 sections 8 and 9).
        var dpopNonce: String? = nil
        /// The `WWW-Authenticate` header of a refusal.
        var challenge: String? = nil
    }

    /// GETs `url`, with a bearer token when given. A request with a token does not follow redirects: it asks the
    /// endpoint about that token, and another host's answer (which never saw it) proves nothing.
    func get(_ url: String, bearerToken: String? = nil) async throws(OIDCFailure) -> Response {
        var headers = [(name: "Accept", value: "application/json")]
        if let bearerToken { headers.append((name: "Authorization", value: "Bearer \(bearerToken)")) }
        return try await self.send(HTTPRequest(.get, url, headers: headers, followsRedirects: bearerToken == nil))
    }

    /// GETs `url` with a DPoP-bound access token and its proof (RFC 9449 section 7.1).
    func get(_ url: String, dpopToken: String, proof: String) async throws(OIDCFailure) -> Response {
        let headers = [
            (name: "Accept", value: "application/json"),
            (name: "Authorization", value: "DPoP \(dpopToken)"),
            (name: "DPoP", value: proof),
        ]
        return try await self.send(HTTPRequest(.get, url, headers: headers, followsRedirects: false))
    }

    /// Sends a `DELETE` (or, with `post`, a `POST`) without a body, with a bearer token: an account-deletion endpoint.
    func delete(_ url: String, post: Bool, bearerToken: String) async throws(OIDCFailure) -> Response {
        let headers = [
            (name: "Accept", value: "application/json"),
            (name: "Authorization", value: "Bearer \(bearerToken)"),
        ]
        return try await self.send(HTTPRequest(post ? .post : .delete, url, headers: headers))
    }

    /// POSTs a form (`application/x-www-form-urlencoded`).
    func post(
        _ url: String,
        form: [(String, String)],
        headers: [(String, String)] = []
    ) async throws(OIDCFailure)
        -> Response
    {
        var all = [
            (name: "Accept", value: "application/json"),
            (name: "Content-Type", value: "application/x-www-form-urlencoded"),
        ]
        for (name, value) in headers { all.append((name: name, value: value)) }
        let body = Array(FormEncoding.encode(form).utf8)
        return try await self.send(HTTPRequest(.post, url, headers: all, body: body))
    }

    private func send(_ request: HTTPRequest) async throws(OIDCFailure) -> Response {
        let host =
            URL(string: request.url).flatMap { url in url.host.map { "\($0)\(url.port.map { ":\($0)" } ?? "")" } }
            ?? "the provider"
        let response: HTTPResponse
        do {
            response = try await self.client.send(
                request,
                timeout: self.timeout,
                maximumBodyBytes: Self.maximumBodyBytes
            )
        } catch {
            switch error {
            case .cancelled:
                throw .unavailable("the request to \(host) was cancelled")
            case .tooLarge:
                throw .invalid("the answer of \(host) is longer than \(Self.maximumBodyBytes) bytes")
            case .redirected:
                throw .invalid("\(host) redirected a \(request.method.rawValue) request")
            case .unavailable:
                // Not the provider's doing: nothing was sent.
                throw .unavailable("\(error)")
            default:
                throw .unavailable("cannot reach \(host): \(error)")
            }
        }
        if response.status == 429 || response.status >= 500 {
            throw .unavailable("\(host) answered HTTP \(response.status)")
        }
        return Response(
            status: response.status,
            contentType: response.header("Content-Type"),
            body: response.body,
            dpopNonce: response.header("DPoP-Nonce"),
            challenge: response.header("WWW-Authenticate")
        )
    }
}

extension OIDCHTTP.Response {
    /// The body as a JSON object.
    func jsonObject(what: String) throws(OIDCFailure) -> [String: JSONValue] {
        guard let value = try? JSONDecoder().decode(JSONValue.self, from: Data(self.body)),
            case .object(let object) = value
        else { throw .invalid("\(what) is not a JSON object (HTTP \(self.status))") }
        return object
    }

    /// The OAuth error of a 4xx answer (RFC 6749 §5.2), or nil when the body holds none.
    func oauthError() -> OIDCFailure {
        guard let value = try? JSONDecoder().decode(JSONValue.self, from: Data(self.body)),
            case .object(let object) = value, case .string(let error)? = object["error"]
        else { return .oauth(status: self.status, error: nil, description: nil) }
        return .oauth(
            status: self.status,
            error: Self.printable(error, limit: 64),
            description: object["error_description"]?.stringValue.map { Self.printable($0, limit: 300) }
        )
    }

    /// Text from the provider made safe to show: printable characters only, shortened.
    static func printable(_ text: String, limit: Int) -> String {
        let cleaned = String(
            text.unicodeScalars.prefix(limit).map { $0.properties.generalCategory == .control ? " " : Character($0) }
        )
        return text.unicodeScalars.count > limit ? cleaned + "…" : cleaned
    }
}

/// `application/x-www-form-urlencoded` (the WHATWG URL standard's serializer, as OAuth 2.0 requires).
enum FormEncoding {
    static func encode(_ fields: [(String, String)]) -> String {
        fields.map { "\(self.escape($0.0))=\(self.escape($0.1))" }.joined(separator: "&")
    }

    static func escape(_ text: String) -> String {
        var result = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "*"):
                result.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: " "):
                result += "+"
            default:
                result += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return result
    }

    /// Percent-encodes a query component (RFC 3986 unreserved characters stay as they are).
    static func queryEscape(_ text: String) -> String {
        var result = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                result.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                result += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return result
    }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String {
        String(repeating: "0", count: max(0, length - self.count)) + self
    }
}
