import NIOCore

/// One frame of newline-delimited JSON.
public enum LineFrame: Sendable, Equatable {
    /// A complete line without its terminator (`\n` or `\r\n`).
    case line(ByteBuffer)
    /// The current line grew past the limit. Nothing after it is decoded: the reader answers `line_too_long` and
    /// closes the connection.
    case tooLong
}

/// Splits a byte stream into lines, with a hard limit on the length of a line.
///
/// The limit is enforced as soon as the buffered part of a line exceeds it, so a peer that never sends a newline
/// costs at most `maximumLineLength` bytes. The splitter remembers how far it has scanned, so a line that arrives one
/// byte at a time costs linear, not quadratic, time. Lines are slices of the bytes read: nothing is copied.
///
/// The server's `RequestHandler` drives it directly on the bytes it reads (one pipeline stage fewer on every request);
/// `LineFrameDecoder` wraps it for a NIO pipeline (the client library).
///
/// The Varlink socket splits its messages the same way, at NUL bytes instead of newlines (`terminator: 0`).
public struct LineSplitter: Sendable {
    private let maximumLineLength: Int
    private let terminator: UInt8
    /// `\r\n` ends a line too (not a NUL-terminated message, where a `\r` is just a byte of it).
    private let stripsCarriageReturn: Bool
    private var scannedBytes = 0
    private var overflowed = false

    /// - Parameters:
    ///   - maximumLineLength: the longest line accepted, not counting its terminator.
    ///   - terminator: the byte that ends a line: a newline, or NUL for Varlink messages.
    public init(maximumLineLength: Int, terminator: UInt8 = UInt8(ascii: "\n")) {
        self.maximumLineLength = maximumLineLength
        self.terminator = terminator
        self.stripsCarriageReturn = terminator == UInt8(ascii: "\n")
    }

    /// Takes the next frame from the front of `buffer`: a complete line, or `.tooLong` once when the current line
    /// passes the limit (after which every byte is dropped). Nil when `buffer` holds no complete line yet.
    public mutating func next(from buffer: inout ByteBuffer) -> LineFrame? {
        guard !self.overflowed else {
            buffer.moveReaderIndex(to: buffer.writerIndex)
            return nil
        }
        let view = buffer.readableBytesView
        let searchStart = view.index(view.startIndex, offsetBy: self.scannedBytes)
        guard let newline = view[searchStart...].firstIndex(of: self.terminator) else {
            self.scannedBytes = view.count
            // A trailing `\r` may still turn out to be part of the terminator.
            let pending = self.stripsCarriageReturn && view.last == UInt8(ascii: "\r") ? view.count - 1 : view.count
            return pending > self.maximumLineLength ? self.overflow(&buffer) : nil
        }
        var length = newline - view.startIndex
        if self.stripsCarriageReturn, length > 0, view[newline - 1] == UInt8(ascii: "\r") {
            length -= 1
        }
        self.scannedBytes = 0
        if length > self.maximumLineLength { return self.overflow(&buffer) }
        let line = buffer.getSlice(at: buffer.readerIndex, length: length)!
        buffer.moveReaderIndex(forwardBy: newline - view.startIndex + 1)
        return .line(line)
    }

    /// At the end of the input (the peer shut down its sending side, or closed), after `next` has taken every
    /// complete line: what is left has no terminator, and it is the peer's last line
    /// (`printf '%s' '{"method":"status"}' | socat - UNIX-CONNECT:...`), a request like any other.
    public mutating func last(from buffer: inout ByteBuffer) -> LineFrame? {
        defer { buffer.moveReaderIndex(to: buffer.writerIndex) }
        guard !self.overflowed, buffer.readableBytes > 0 else { return nil }
        var length = buffer.readableBytes
        if self.stripsCarriageReturn,
            buffer.getInteger(at: buffer.writerIndex - 1, as: UInt8.self) == UInt8(ascii: "\r")
        {
            length -= 1
        }
        self.scannedBytes = 0
        return .line(buffer.readSlice(length: length)!)
    }

    private mutating func overflow(_ buffer: inout ByteBuffer) -> LineFrame {
        self.overflowed = true
        buffer.moveReaderIndex(to: buffer.writerIndex)
        return .tooLong
    }
}
