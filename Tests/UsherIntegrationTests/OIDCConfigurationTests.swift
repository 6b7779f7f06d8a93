import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// The `type = "oidc"` section: what a bad one says, and the documented sample.
@Suite(.integrationHangGuard)
struct OIDCConfigurationTests {
    static let base = "[providers.corp]\ntype = \"oidc\"\nclient_id = \"usher\"\n"

    /// Each bad section and the key its error must name. Typed, so the compiler need not infer the tuple type.
    static let badSections: [(String, String)] = [
        (Self.base, "providers.corp.issuer"),
        (Self.base + "issuer = \"http://id.example.com\"\n", "providers.corp.issuer"),
        (Self.base + "issuer = \"ftp://127.0.0.1/x\"\n", "providers.corp.issuer"),
        (Self.base + "issuer = \"https://id.example.com?x=1\"\n", "providers.corp.issuer"),
        ("[providers.corp]\ntype = \"oidc\"\nissuer = \"https://id.example.com\"\n", "providers.corp.client_id"),
        (
            Self.base + "issuer = \"https://id.example.com\"\nclient_secret_file = \"no-such.secret\"\n",
            "providers.corp.client_secret_file"
        ),
        (
            Self.base + "issuer = \"https://id.example.com\"\ntoken_endpoint_auth = \"client_secret_post\"\n",
            "providers.corp.token_endpoint_auth"
        ),
        (
            Self.base + "issuer = \"https://id.example.com\"\ntoken_endpoint_auth = \"private_key_jwt\"\n",
            "providers.corp.token_endpoint_auth"
        ),
        (
            Self.base + "issuer = \"https://id.example.com\"\nredirect_uri = \"https://app.example.com/cb\"\n",
            "providers.corp.redirect_uri"
        ),
        (
            Self.base + "issuer = \"https://id.example.com\"\nredirect_uri = \"http://127.0.0.1/callback\"\n",
            "providers.corp.redirect_uri"
        ),
        (Self.base + "issuer = \"https://id.example.com\"\nscopes = [\"openid profile\"]\n", "providers.corp.scopes"),
        (Self.base + "issuer = \"https://id.example.com\"\nscopes = []\n", "providers.corp.scopes"),
        (Self.base + "issuer = \"https://id.example.com\"\nprompt = \"always\"\n", "providers.corp.prompt"),
        (
            Self.base + "issuer = \"https://id.example.com\"\nrequest_timeout = \"1h\"\n",
            "providers.corp.request_timeout"
        ),
        (
            Self.base + "issuer = \"https://id.example.com\"\nclient_secret = \"inline\"\n",
            "providers.corp.client_secret"
        ),
        (
            Self.base + "issuer = \"https://id.example.com\"\ngrant_types = [\"pasword\"]\n",
            "providers.corp.grant_types"
        ),
        (
            Self.base + "issuer = \"https://id.example.com\"\ngrant_types = \"password\"\n",
            "providers.corp.grant_types"
        ),
        (Self.base + "issuer = \"https://id.example.com\"\ngrant_types = []\n", "providers.corp.grant_types"),
        (
            Self.base + "issuer = \"https://id.example.com\"\ndelete_account_url = \"http://id.example.com/delete\"\n",
            "providers.corp.delete_account_url"
        ),
        (
            Self.base + "issuer = \"https://id.example.com\"\ndelete_account_method = \"PUT\"\n",
            "providers.corp.delete_account_method"
        ),
        (
            Self.base + "issuer = \"https://id.example.com\"\ngrant_types = [\"password\", 1]\n",
            "providers.corp.grant_types"
        ),
    ]

    @Test(arguments: Self.badSections)
    func badSectionsNameTheKeyAndTheFile(_ section: String, key: String) async throws {
        try await expectConfigurationError("[daemon]\ndefault_provider = \"corp\"\n" + section, naming: key)
    }

    /// A provider whose discovery document lists only the authorization code grant: the password grant is refused
    /// without `grant_types`, and goes to the token endpoint with `grant_types = ["password"]`.
    @Test func grantTypesOverrideTheDiscoveryDocument() async throws {
        let files = try TestDirectory()
        defer { files.remove() }
        let server = try StaticHTTPServer(directory: files.path)
        let issuer = "http://127.0.0.1:\(server.port)"
        try FileManager.default.createDirectory(
            atPath: files.file(".well-known"),
            withIntermediateDirectories: true
        )
        try files.write(
            ".well-known/openid-configuration",
            #"{"issuer":"\#(issuer)","authorization_endpoint":"\#(issuer)/authorize","token_endpoint":"\#(issuer)/token","jwks_uri":"\#(issuer)/jwks","grant_types_supported":["authorization_code"]}"#
        )
        do {
            try await Self.checkGrantTypes(issuer: issuer)
            await server.stop()
        } catch {
            await server.stop()
            throw error
        }
    }

    private static func checkGrantTypes(issuer: String) async throws {
        let section = "[daemon]\ndefault_provider = \"corp\"\n" + Self.base + "issuer = \"\(issuer)\"\n"
        let password: [String: JSONValue] = [
            "credentials": ["type": "password", "username": "ada", "password": "hunter2"]
        ]
        try await DaemonProcess.with(config: section) { daemon in
            let client = try daemon.connect()
            client.timeout = .seconds(60)
            let response = try await client.call("login", password)
            #expect(response["error"]?["code"] == "unsupported_credentials", "\(response)")
            let providers = try #require(try await client.result("providers")["providers"]?.arrayValue)
            #expect(providers.first?["credentials"] == ["authorization_code"])
        }
        try await DaemonProcess.with(config: section + "grant_types = [\"password\"]\n") { daemon in
            let client = try daemon.connect()
            client.timeout = .seconds(60)
            // The static server does not take POSTs (it answers 405 or drops the request): the login fails, but at the
            // token endpoint, which is the point.
            let response = try await client.call("login", password)
            let code = response["error"]?["code"]?.stringValue
            #expect(code == "provider_error" || code == "provider_unavailable", "\(response)")
            let tokenRequests = daemon.log.split(separator: "\n").filter {
                $0.contains("token request failed") && $0.contains("password")
            }
            #expect(tokenRequests.count == 1, "\(daemon.log)")
            let providers = try #require(try await client.result("providers")["providers"]?.arrayValue)
            #expect(providers.first?["credentials"] == ["password"])
        }
    }

    /// The sample's oidc section, uncommented, is a working configuration.
    @Test func theDocumentedSampleSectionParses() async throws {
        let sample = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("config/usherd.toml")
        let text = try String(contentsOf: sample, encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let start = try #require(lines.firstIndex(of: "# [providers.corp]"))
        var section: [String] = []
        for line in lines[start...] {
            guard line.hasPrefix("# ") else { break }
            let body = String(line.dropFirst(2))
            // Keys and the section header; the prose between them stays out.
            if body.hasPrefix("[") || body.range(of: #"^[a-z_]+ = "#, options: .regularExpression) != nil {
                section.append(body)
            }
        }
        #expect(section.count == 16, "\(section)")
        let directory = try TestDirectory()
        defer { directory.remove() }
        try directory.write("corp.secret", "s3cret\n")
        let config = section.joined(separator: "\n")
            .replacingOccurrences(of: "/etc/usher/corp.secret", with: directory.file("corp.secret"))
            // No request leaves the machine: the issuer becomes a loopback port where nothing listens.
            .replacingOccurrences(of: "https://id.example.com", with: "http://127.0.0.1:9")
        try await DaemonProcess.with(config: "[daemon]\ndefault_provider = \"corp\"\n" + config) { daemon in
            let client = try daemon.connect()
            let providers = try #require(try await client.result("providers")["providers"]?.arrayValue)
            #expect(providers.first?["name"] == "corp")
            #expect(providers.first?["type"] == "oidc")
        }
    }
}
