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

// MARK: - Base64URL

@Suite struct Base64URLTests {
    @Test func encodesRFC4648Vectors() {
        // RFC 4648 §10, in the URL-safe alphabet and without padding.
        let vectors: [(String, String)] = [
            ("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"),
            ("foobar", "Zm9vYmFy"),
        ]
        for (plain, encoded) in vectors {
            #expect(Base64URL.encode(Array(plain.utf8)) == encoded)
            #expect(Base64URL.decode(encoded) == Array(plain.utf8))
        }
    }

    @Test func usesTheURLSafeAlphabet() {
        #expect(Base64URL.encode([0xFB, 0xFF, 0xBF]) == "-_-_")
        #expect(Base64URL.decode("-_-_") == [0xFB, 0xFF, 0xBF])
    }

    @Test func roundTripsEveryLengthAndByte() {
        for length in 0..<70 {
            let bytes = SecureRandom.bytes(count: length)
            #expect(Base64URL.decode(Base64URL.encode(bytes)) == bytes)
        }
        let all = (0...255).map { UInt8($0) }
        #expect(Base64URL.decode(Base64URL.encode(all)) == all)
    }

    @Test(arguments: [
        "Zg==",  // padding
        "Zm9v=",  // padding
        "Zm+v",  // standard alphabet
        "Zm/v",  // standard alphabet
        "Zm9 v",  // whitespace
        "Zm9v\n",  // newline
        "Z",  // impossible length
        "Zm9vY",  // impossible length
        "Zh",  // non-zero trailing bits
        "Zm9",  // non-zero trailing bits
        "Zm9vé",  // non-ASCII
    ])
    func rejectsInvalidInput(_ input: String) {
        #expect(Base64URL.decode(input) == nil)
    }
}

// MARK: - SecureRandom

@Suite struct SecureRandomTests {
    @Test func bytesHaveTheRequestedLengthAndDiffer() {
        for count in [0, 1, 7, 8, 9, 16, 33] {
            #expect(SecureRandom.bytes(count: count).count == count)
        }
        #expect(SecureRandom.bytes(count: 32) != SecureRandom.bytes(count: 32))
    }

    @Test func tokensAreBase64URLOf32Bytes() throws {
        let token = SecureRandom.token()
        #expect(token.count == 43)
        #expect(try #require(Base64URL.decode(token)).count == 32)
        #expect(SecureRandom.token() != token)
    }

    @Test func sha256MatchesKnownDigest() {
        #expect(
            SecureRandom.sha256Hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        )
        #expect(SecureRandom.sha256("abc").count == 32)
        #expect(SecureRandom.hex([0x00, 0x0F, 0xA0, 0xFF]) == "000fa0ff")
    }

    @Test func constantTimeEqualsComparesContentsAndLength() {
        #expect(SecureRandom.constantTimeEquals([1, 2, 3], [1, 2, 3]))
        #expect(SecureRandom.constantTimeEquals([], []))
        #expect(!SecureRandom.constantTimeEquals([1, 2, 3], [1, 2, 4]))
        #expect(!SecureRandom.constantTimeEquals([1, 2, 3], [1, 2]))
    }
}

// MARK: - PasswordHasher

@Suite struct PasswordHasherTests {
    /// A cheap cost, so the suite runs in milliseconds.
    let hasher = PasswordHasher(
        threadPool: .singleton,
        parameters: .init(logN: 10, blockSize: 8, parallelism: 1)
    )

    @Test(.timeLimit(.minutes(1)))
    func hashVerifiesTheRightPasswordOnly() async throws {
        let encoded = try await hasher.hash("correct horse battery staple")
        #expect(await hasher.verify("correct horse battery staple", against: encoded))
        #expect(!(await hasher.verify("correct horse battery stapler", against: encoded)))
        #expect(!(await hasher.verify("", against: encoded)))
    }

    @Test(.timeLimit(.minutes(1)))
    func encodingIsSelfDescribing() async throws {
        let encoded = try await hasher.hash("secret")
        let fields = encoded.split(separator: "$", omittingEmptySubsequences: false)
        #expect(fields.count == 5)
        #expect(fields[0] == "")
        #expect(fields[1] == "scrypt")
        #expect(fields[2] == "ln=10,r=8,p=1")
        #expect(Base64URL.decode(fields[3])?.count == 16)
        #expect(Base64URL.decode(fields[4])?.count == 32)
        #expect(!encoded.contains("secret"))
    }

    @Test(.timeLimit(.minutes(1)))
    func samePasswordHashesDifferently() async throws {
        let first = try await hasher.hash("same password")
        let second = try await hasher.hash("same password")
        #expect(first != second)
        #expect(await hasher.verify("same password", against: first))
        #expect(await hasher.verify("same password", against: second))
    }

    @Test(.timeLimit(.minutes(1)))
    func emptyAndUnicodePasswordsWork() async throws {
        let empty = try await hasher.hash("")
        #expect(await hasher.verify("", against: empty))
        #expect(!(await hasher.verify(" ", against: empty)))

        let unicode = try await hasher.hash("pässwörd 🔑")
        #expect(await hasher.verify("pässwörd 🔑", against: unicode))
        #expect(!(await hasher.verify("passwort 🔑", against: unicode)))
    }

    @Test(.timeLimit(.minutes(1)))
    func hashesMadeAtAnotherCostStillVerify() async throws {
        let cheaper = PasswordHasher(threadPool: .singleton, parameters: .init(logN: 8, blockSize: 4, parallelism: 2))
        let encoded = try await cheaper.hash("upgrade me")
        #expect(encoded.hasPrefix("$scrypt$ln=8,r=4,p=2$"))
        #expect(await hasher.verify("upgrade me", against: encoded))
        #expect(hasher.needsRehash(encoded))
        #expect(!cheaper.needsRehash(encoded))
    }

    /// RFC 7914 §12 test vectors, fed through the stored-hash format: proves that `ln`, `r` and `p` reach
    /// scrypt as N = 2^ln, r and p, and that the hash length follows the stored hash.
    @Test(
        .timeLimit(.minutes(1)),
        arguments: [
            (
                "password", "NaCl", "ln=10,r=8,p=16",
                "fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b373162"
                    + "2eaf30d92e22a3886ff109279d9830dac727afb94a83ee6d8360cbdfa2cc0640"
            ),
            (
                "pleaseletmein", "SodiumChloride", "ln=14,r=8,p=1",
                "7023bdcb3afd7348461c06cd81fd38ebfda8fbba904f8e3ea9b543f6545da1f2"
                    + "d5432955613f0fcf62d49705242a9af9e61e85dc0d651e40dfcf017b45575887"
            ),
        ]
    )
    func verifiesRFC7914Vectors(password: String, salt: String, settings: String, derivedHex: String) async {
        let derived = bytes(hex: derivedHex)
        let encoded = "$scrypt$\(settings)$\(Base64URL.encode(Array(salt.utf8)))$\(Base64URL.encode(derived))"
        #expect(await hasher.verify(password, against: encoded))
        #expect(!(await hasher.verify(password + "!", against: encoded)))
        // The same salt and derived key under any other cost must not verify.
        let wrongCost = encoded.replacingOccurrences(of: "r=8", with: "r=4")
        #expect(!(await hasher.verify(password, against: wrongCost)))
    }

    @Test(.timeLimit(.minutes(1)))
    func malformedHashesNeverVerify() async throws {
        let good = try await hasher.hash("pw")
        let parts = good.split(separator: "$", omittingEmptySubsequences: false).map(String.init)
        let salt = parts[3]
        let hash = parts[4]
        let malformed = [
            "",
            "$",
            "pw",
            "$scrypt$",
            "$scrypt$ln=10,r=8,p=1$\(salt)",
            "$scrypt$ln=10,r=8,p=1$\(salt)$",
            "$scrypt$ln=10,r=8,p=1$$\(hash)",
            "$scrypt$ln=10,r=8,p=1$\(salt)$\(hash)$",
            "$bcrypt$ln=10,r=8,p=1$\(salt)$\(hash)",
            "scrypt$ln=10,r=8,p=1$\(salt)$\(hash)",
            "$scrypt$ln=10,r=8$\(salt)$\(hash)",
            "$scrypt$r=8,ln=10,p=1$\(salt)$\(hash)",
            "$scrypt$ln=10,r=8,p=1,x=1$\(salt)$\(hash)",
            "$scrypt$ln=+10,r=8,p=1$\(salt)$\(hash)",
            "$scrypt$ln=-1,r=8,p=1$\(salt)$\(hash)",
            "$scrypt$ln=0,r=8,p=1$\(salt)$\(hash)",
            "$scrypt$ln=10,r=0,p=1$\(salt)$\(hash)",
            "$scrypt$ln=10,r=8,p=0$\(salt)$\(hash)",
            "$scrypt$ln=99,r=8,p=1$\(salt)$\(hash)",  // would need 2^99 blocks
            "$scrypt$ln=20,r=32,p=1$\(salt)$\(hash)",  // 4 GiB of memory
            "$scrypt$ln=10,r=8,p=999$\(salt)$\(hash)",
            "$scrypt$ln=99999999999999999999,r=8,p=1$\(salt)$\(hash)",
            "$scrypt$ln=10,r=8,p=1$\(salt)=$\(hash)",
            "$scrypt$ln=10,r=8,p=1$\(salt)$\(hash)==",
            "$scrypt$ln=10,r=8,p=1$\(salt)$\(hash.dropLast(2))",  // hash too short to decode canonically
            "$scrypt$ln=10,r=8,p=1$\(salt)$\(Base64URL.encode(SecureRandom.bytes(count: 8)))",  // hash too short
            "$scrypt$ln=10,r=8,p=1$\(salt)$\(String(repeating: "A", count: 600))",
            "$scrypt$ln=11,r=8,p=1$\(salt)$\(hash)",  // right bytes, wrong cost
        ]
        for encoded in malformed {
            #expect(!(await hasher.verify("pw", against: encoded)), "accepted \(encoded)")
        }
        #expect(await hasher.verify("pw", against: good))
    }

    @Test(.timeLimit(.minutes(1)))
    func failsCleanlyOnAStoppedThreadPool() async throws {
        let pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
        let stopped = PasswordHasher(threadPool: pool, parameters: .init(logN: 10, blockSize: 8, parallelism: 1))
        let encoded = try await stopped.hash("pw")
        try await pool.shutdownGracefully()

        // NIO reports work submitted to a stopped pool as cancelled.
        await #expect(throws: (any Error).self) { try await stopped.hash("pw") }
        #expect(!(await stopped.verify("pw", against: encoded)))
    }

    @Test func errorsDoNotMentionPasswords() {
        #expect("\(PasswordHasher.HashingError.derivationFailed)" == "scrypt key derivation failed")
    }
}

// MARK: - Helpers

private func bytes(hex: String) -> [UInt8] {
    var result: [UInt8] = []
    var index = hex.startIndex
    while index < hex.endIndex {
        let next = hex.index(index, offsetBy: 2)
        result.append(UInt8(hex[index..<next], radix: 16)!)
        index = next
    }
    return result
}
