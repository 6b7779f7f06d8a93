/// The access and refresh token of one session, packed into a single allocation.
///
/// Every logged-in user's tokens stay in memory (reads answer from them without touching the disk), so their size is
/// most of the daemon's memory on a large device: as two `String`s a 368-character JWT and a 43-character refresh
/// token take two allocations of 432 and 96 bytes. Tokens are almost always base64url segments joined by dots (JWTs,
/// and the random opaque tokens of most providers), which pack losslessly into three bytes per four characters; so
/// both are kept as one byte array, each segment packed when that round-trips exactly and the token kept verbatim
/// otherwise. 100,000 users then hold about 16 MB less.
///
/// Unpacking allocates a `String`: the hot read path keeps the encoded answer for the current token, so a token is
/// unpacked once per answer that changes, not per request. Equal tokens pack to equal bytes (the packing is a
/// function of the text and unpacking is its inverse), so comparing and hashing the packed bytes compares the tokens.
package struct PackedTokens: Sendable, Hashable {
    private var bytes: [UInt8]

    package init(accessToken: String, refreshToken: String?) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity((accessToken.utf8.count + (refreshToken?.utf8.count ?? 0)) * 3 / 4 + 16)
        Self.append(accessToken, to: &bytes)
        if let refreshToken {
            Self.append(refreshToken, to: &bytes)
        }
        self.bytes = bytes
    }

    package var accessToken: String {
        var index = 0
        return Self.read(self.bytes, at: &index)
    }

    /// How many bytes the two tokens take (their texts' UTF-8 would take about a third more).
    package var byteCount: Int { self.bytes.count }

    /// Whether there is a refresh token, without unpacking it.
    package var hasRefreshToken: Bool {
        var index = 0
        Self.skip(self.bytes, at: &index)
        return index < self.bytes.count
    }

    package var refreshToken: String? {
        var index = 0
        Self.skip(self.bytes, at: &index)
        return index < self.bytes.count ? Self.read(self.bytes, at: &index) : nil
    }

    // MARK: - Format
    //
    // A token is a tag byte, then:
    // - tag 0 (verbatim): its UTF-8 length as a varint, then its UTF-8 bytes;
    // - tag 1 (packed): its number of dot-separated segments as a varint, then per segment its length in characters
    //   as a varint and its base64url-decoded bytes (`characters * 6 / 8` of them).

    private static let verbatim: UInt8 = 0
    private static let packed: UInt8 = 1

    private static func append(_ token: String, to bytes: inout [UInt8]) {
        var token = token
        token.withUTF8 { utf8 in
            let mark = bytes.count
            if Self.appendPacked(utf8, to: &bytes) { return }
            bytes.removeSubrange(mark...)
            bytes.append(Self.verbatim)
            Self.appendVarint(utf8.count, to: &bytes)
            bytes.append(contentsOf: utf8)
        }
    }

    /// Appends the packed form; false (having appended garbage the caller drops) when the token does not round-trip.
    private static func appendPacked(_ utf8: UnsafeBufferPointer<UInt8>, to bytes: inout [UInt8]) -> Bool {
        var segments = 1
        for byte in utf8 where byte == UInt8(ascii: ".") { segments += 1 }
        bytes.append(Self.packed)
        Self.appendVarint(segments, to: &bytes)
        var start = 0
        while start <= utf8.count {
            var end = start
            while end < utf8.count, utf8[end] != UInt8(ascii: ".") { end += 1 }
            let segment = UnsafeBufferPointer(rebasing: utf8[start..<end])
            // `Base64URL.decode` refuses what no byte string encodes to (4k+1 characters, stray bits).
            Self.appendVarint(segment.count, to: &bytes)
            guard Base64URL.decode(segment, into: &bytes) else { return false }
            start = end + 1
        }
        return true
    }

    private static func read(_ bytes: [UInt8], at index: inout Int) -> String {
        let tag = bytes[index]
        index += 1
        if tag == Self.verbatim {
            let count = Self.readVarint(bytes, at: &index)
            defer { index += count }
            return String(decoding: bytes[index..<index + count], as: UTF8.self)
        }
        let segments = Self.readVarint(bytes, at: &index)
        var text: [UInt8] = []
        for segment in 0..<segments {
            if segment > 0 { text.append(UInt8(ascii: ".")) }
            let characters = Self.readVarint(bytes, at: &index)
            let count = characters * 6 / 8
            Base64URL.encode(bytes[index..<index + count], into: &text)
            index += count
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// Moves `index` past one token without unpacking it.
    private static func skip(_ bytes: [UInt8], at index: inout Int) {
        let tag = bytes[index]
        index += 1
        if tag == Self.verbatim {
            index += Self.readVarint(bytes, at: &index)
            return
        }
        for _ in 0..<Self.readVarint(bytes, at: &index) {
            index += Self.readVarint(bytes, at: &index) * 6 / 8
        }
    }

    private static func appendVarint(_ value: Int, to bytes: inout [UInt8]) {
        var value = UInt(value)
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    private static func readVarint(_ bytes: [UInt8], at index: inout Int) -> Int {
        var value = 0
        var shift = 0
        while true {
            let byte = bytes[index]
            index += 1
            value |= Int(byte & 0x7F) << shift
            if byte < 0x80 { return value }
            shift += 7
        }
    }
}
