import Crypto
import Foundation
import NIOPosix
import Testing
import UsherCore
import UsherProtocol

@testable import UsherProviders

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// MARK: - TokenSigner

@Suite struct TokenSignerTests {
    let signingKey: P256.Signing.PrivateKey
    let signer: TokenSigner

    init() {
        signingKey = P256.Signing.PrivateKey()
        signer = TokenSigner(privateKey: signingKey)
    }

    @Test func signedTokensVerifyAndCarryTheirClaims() async throws {
        let claims: [String: JSONValue] = [
            "iss": "usher", "sub": "alice", "exp": 1_900_000_000, "admin": true, "groups": ["wheel", "users"],
            "nested": ["a": .double(1.5), "b": nil],
        ]
        let token = try await signer.sign(claims: claims)
        #expect(token.split(separator: ".", omittingEmptySubsequences: false).count == 3)
        #expect(await signer.verify(token) == claims)
    }

    @Test func headerNamesAlgorithmTypeAndKey() async throws {
        let token = try await signer.sign(claims: ["sub": "alice"])
        let header = try decodeObject(String(token.split(separator: ".")[0]))
        #expect(header == ["alg": "ES256", "typ": "JWT", "kid": .string(signer.keyID)])
    }

    /// Claims are written as usher writes JSON (`JWTSigning`): sorted keys, and a URL's slashes as they are.
    @Test func claimsAreWrittenWithSortedKeysAndUnescapedSlashes() async throws {
        let token = try await signer.sign(claims: ["sub": "alice", "iss": "https://id.example.com/", "aud": "api"])
        let payload = try #require(Base64URL.decode(String(token.split(separator: ".")[1])))
        #expect(
            String(decoding: payload, as: UTF8.self) == #"{"aud":"api","iss":"https://id.example.com/","sub":"alice"}"#
        )
    }

    @Test func signatureIsRawRAndSVerifiableBySwiftCrypto() async throws {
        let privateKey = P256.Signing.PrivateKey()
        let token = try await TokenSigner(privateKey: privateKey).sign(claims: ["sub": "alice"])
        let parts = token.split(separator: ".").map(String.init)
        let signature = try #require(Base64URL.decode(parts[2]))
        #expect(signature.count == 64)
        let ecdsa = try P256.Signing.ECDSASignature(rawRepresentation: signature)
        #expect(privateKey.publicKey.isValidSignature(ecdsa, for: Array("\(parts[0]).\(parts[1])".utf8)))
    }

    @Test func tamperedTokensAreRejected() async throws {
        let token = try await signer.sign(claims: ["sub": "alice", "admin": false])
        let parts = token.split(separator: ".").map(String.init)

        let forgedPayload = Base64URL.encode(Array(#"{"admin":true,"sub":"alice"}"#.utf8))
        #expect(await signer.verify("\(parts[0]).\(forgedPayload).\(parts[2])") == nil)

        var signature = try #require(Base64URL.decode(parts[2]))
        signature[10] ^= 0x01
        #expect(await signer.verify("\(parts[0]).\(parts[1]).\(Base64URL.encode(signature))") == nil)

        // Signed by another key that claims this key's ID.
        let other = try await TokenSigner(privateKey: P256.Signing.PrivateKey()).sign(claims: ["sub": "alice"])
        let otherParts = other.split(separator: ".").map(String.init)
        #expect(await signer.verify("\(parts[0]).\(otherParts[1]).\(otherParts[2])") == nil)
        #expect(await signer.verify(other) == nil)

        // Not even valid syntax.
        for malformed in [
            "", ".", "..", "\(parts[0]).\(parts[1])", "\(token).", "\(parts[0]).\(parts[1]).",
            "\(parts[0])..\(parts[2])", "\(parts[0]).\(parts[1]).\(parts[2])=", "\(parts[0]).\(parts[1])x.\(parts[2])",
        ] {
            #expect(await signer.verify(malformed) == nil, "accepted \(malformed)")
        }
        #expect(await signer.verify(token) != nil)
    }

    @Test func headersOtherThanOursAreRejected() async throws {
        let token = try await signer.sign(claims: ["sub": "alice"])
        let parts = token.split(separator: ".").map(String.init)
        let kid = signer.keyID
        let headers = [
            #"{"alg":"none","typ":"JWT","kid":"\#(kid)"}"#,
            #"{"alg":"HS256","typ":"JWT","kid":"\#(kid)"}"#,
            #"{"alg":"ES256","typ":"JWT","kid":"someone-else"}"#,
            #"{"alg":"ES256","typ":"JWT"}"#,
            #"{"alg":"ES256","typ":"JWT","kid":"\#(kid)","crit":["exp"]}"#,
            #"["ES256"]"#,
            "not json",
        ]
        for header in headers {
            // Re-sign with the right key, so only the header can be the reason for rejection.
            let input = Base64URL.encode(Array(header.utf8)) + "." + parts[1]
            let signature = try rawSignature(over: input)
            #expect(await signer.verify(input + "." + signature) == nil, "accepted header \(header)")
        }
        #expect(await signer.verify(token) != nil)
    }

    @Test func rejectsAPayloadThatIsNotAnObject() async throws {
        let header = try await signer.sign(claims: [:]).split(separator: ".")[0]
        let input = header + "." + Base64URL.encode(Array("[1,2]".utf8))
        #expect(await signer.verify(input + "." + (try rawSignature(over: input))) == nil)
    }

    @Test func publicJWKDescribesTheKey() throws {
        let privateKey = P256.Signing.PrivateKey()
        let signer = TokenSigner(privateKey: privateKey)
        let jwk = signer.publicJWK
        #expect(jwk.kty == "EC")
        #expect(jwk.crv == "P-256")
        #expect(jwk.use == "sig")
        #expect(jwk.alg == "ES256")
        #expect(jwk.kid == signer.keyID)
        #expect(jwk.n == nil && jwk.e == nil)
        let x = try #require(jwk.x.flatMap(Base64URL.decode))
        let y = try #require(jwk.y.flatMap(Base64URL.decode))
        #expect(x.count == 32 && y.count == 32)
        #expect(x + y == Array(privateKey.publicKey.rawRepresentation))
    }

    @Test func keyIDIsTheRFC7638Thumbprint() throws {
        let jwk = signer.publicJWK
        // Computed independently: required members in lexicographic order, no whitespace, SHA-256, base64url.
        let canonical = try #require(
            String(
                data: JSONSerialization.data(
                    withJSONObject: ["kty": "EC", "crv": "P-256", "x": jwk.x!, "y": jwk.y!],
                    options: [.sortedKeys, .withoutEscapingSlashes]
                ),
                encoding: .utf8
            )
        )
        #expect(canonical.hasPrefix(#"{"crv":"P-256","kty":"EC","x":""#))
        let digest = Data(SHA256.hash(data: Data(canonical.utf8)))
        let expected = digest.base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        #expect(signer.keyID == expected)
        #expect(signer.keyID.count == 43)
    }

    @Test func descriptionsHideThePrivateKey() {
        let privateKey = P256.Signing.PrivateKey()
        let signer = TokenSigner(privateKey: privateKey)
        let secretForms = [
            SecureRandom.hex(privateKey.rawRepresentation),
            Base64URL.encode(privateKey.rawRepresentation),
            privateKey.rawRepresentation.base64EncodedString(),
        ]
        var dumped = ""
        dump(signer, to: &dumped)
        for text in [String(describing: signer), String(reflecting: signer), dumped] {
            #expect(text.contains(signer.keyID))
            for secret in secretForms { #expect(!text.contains(secret)) }
            #expect(!text.contains("privateKey"))
        }
    }

    // MARK: Key file

    @Test func createsKeyFileWithMode0600AndReloadsTheSameKey() async throws {
        var signers: (created: TokenSigner, reloaded: TokenSigner)?
        try withTemporaryDirectory { directory in
            let path = directory + "/signing-key.pem"
            let created = try TokenSigner.loadOrCreate(at: path)

            var status = stat()
            #expect(lstat(path, &status) == 0)
            #expect(status.st_mode & S_IFMT == S_IFREG)
            #expect(status.st_mode & 0o777 == 0o600)
            let pem = try String(contentsOfFile: path, encoding: .utf8)
            #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))
            // Nothing but the key is left in the directory.
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["signing-key.pem"])

            let reloaded = try TokenSigner.loadOrCreate(at: path)
            #expect(reloaded.keyID == created.keyID)
            #expect(reloaded.publicJWK == created.publicJWK)
            signers = (created, reloaded)
        }
        let (created, reloaded) = try #require(signers)
        #expect(await reloaded.verify(try await created.sign(claims: ["sub": "alice"])) == ["sub": "alice"])
    }

    @Test func createsKeyFileEvenUnderAPermissiveUmask() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/key.pem"
            let previous = umask(0)
            defer { umask(previous) }
            _ = try TokenSigner.loadOrCreate(at: path)
            var status = stat()
            #expect(stat(path, &status) == 0)
            #expect(status.st_mode & 0o777 == 0o600)
        }
    }

    @Test(arguments: [0o644, 0o640, 0o604, 0o660, 0o606, 0o700 | 0o020])
    func refusesAKeyFileOthersCanAccess(mode: Int) throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/key.pem"
            _ = try TokenSigner.loadOrCreate(at: path)
            #expect(chmod(path, mode_t(mode)) == 0)
            let error = #expect(throws: TokenSigner.KeyFileError.self) { try TokenSigner.loadOrCreate(at: path) }
            guard case .insecurePermissions(let reportedPath, _) = error else {
                Issue.record("unexpected error \(String(describing: error))")
                return
            }
            #expect(reportedPath == path)
            #expect("\(error!)".contains(path))
            #expect("\(error!)".contains(String(mode, radix: 8)))
        }
    }

    @Test func refusesSomethingThatIsNotARegularFile() throws {
        try withTemporaryDirectory { directory in
            let keyPath = directory + "/key.pem"
            _ = try TokenSigner.loadOrCreate(at: keyPath)

            let linkPath = directory + "/link.pem"
            #expect(symlink(keyPath, linkPath) == 0)
            let fifoPath = directory + "/fifo.pem"
            #expect(mkfifo(fifoPath, 0o600) == 0)
            let directoryPath = directory + "/dir.pem"
            #expect(mkdir(directoryPath, 0o700) == 0)

            for path in [linkPath, fifoPath, directoryPath] {
                let error = #expect(throws: TokenSigner.KeyFileError.self) { try TokenSigner.loadOrCreate(at: path) }
                guard case .notRegularFile(let reportedPath) = error else {
                    Issue.record("unexpected error \(String(describing: error)) for \(path)")
                    continue
                }
                #expect(reportedPath == path)
            }
        }
    }

    @Test func refusesAFileThatIsNotAKey() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/key.pem"
            let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
            #expect(fd >= 0)
            _ = "not a key\n".withCString { write(fd, $0, strlen($0)) }
            close(fd)
            let error = #expect(throws: TokenSigner.KeyFileError.self) { try TokenSigner.loadOrCreate(at: path) }
            guard case .invalidKey(path) = error else {
                Issue.record("unexpected error \(String(describing: error))")
                return
            }
        }
    }

    @Test func reportsAMissingDirectoryWithItsPath() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/missing/key.pem"
            let error = #expect(throws: TokenSigner.KeyFileError.self) { try TokenSigner.loadOrCreate(at: path) }
            #expect(error.map { "\($0)".contains(directory + "/missing/") } == true)
        }
    }

    // MARK: Helpers

    /// Signs `input` with the signer's key, bypassing `sign(claims:)`, to build hostile tokens.
    private func rawSignature(over input: String) throws -> String {
        try Base64URL.encode(signingKey.signature(for: Array(input.utf8)).rawRepresentation)
    }

    private func decodeObject(_ part: String) throws -> [String: JSONValue] {
        let bytes = try #require(Base64URL.decode(part))
        return try JSONDecoder().decode([String: JSONValue].self, from: Data(bytes))
    }
}

// MARK: - Helpers

/// Runs `body` with a fresh private temporary directory, removed afterwards.
private func withTemporaryDirectory(_ body: (String) throws -> Void) throws {
    var template = Array((NSTemporaryDirectory() + "/usher-crypto-XXXXXX").utf8CString)
    let directory = try template.withUnsafeMutableBufferPointer { buffer -> String in
        guard let pointer = mkdtemp(buffer.baseAddress!) else { throw POSIXError(.init(rawValue: errno)!) }
        return String(cString: pointer)
    }
    defer { try? FileManager.default.removeItem(atPath: directory) }
    try body(directory)
}
