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
/// `LineBasedFrameDecoder` from swift-nio-extras has no length limit; this decoder enforces one as soon as the
/// buffered part of a line exceeds it, so a peer that never sends a newline costs at most `maximumLineLength` bytes.
/// It remembers how far it has scanned, so a line that arrives one byte at a time costs linear, not quadratic, time.
public struct LineFrameDecoder: ByteToMessageDecoder {
    public typealias InboundOut = LineFrame

    private let maximumLineLength: Int
    private var scannedBytes = 0
    private var overflowed = false

    /// - Parameter maximumLineLength: the longest line accepted, not counting its terminator.
    public init(maximumLineLength: Int) {
        self.maximumLineLength = maximumLineLength
    }

    public mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard !self.overflowed else {
            buffer.moveReaderIndex(to: buffer.writerIndex)
            return .needMoreData
        }
        let view = buffer.readableBytesView
        let searchStart = view.index(view.startIndex, offsetBy: self.scannedBytes)
        guard let newline = view[searchStart...].firstIndex(of: UInt8(ascii: "\n")) else {
            self.scannedBytes = view.count
            // A trailing `\r` may still turn out to be part of the terminator.
            let pending = view.last == UInt8(ascii: "\r") ? view.count - 1 : view.count
            if pending > self.maximumLineLength {
                self.overflowed = true
                buffer.moveReaderIndex(to: buffer.writerIndex)
                context.fireChannelRead(Self.wrapInboundOut(.tooLong))
            }
            return .needMoreData
        }
        var length = newline - view.startIndex
        let terminatorLength = 1
        if length > 0, view[newline - 1] == UInt8(ascii: "\r") {
            length -= 1
        }
        self.scannedBytes = 0
        if length > self.maximumLineLength {
            self.overflowed = true
            buffer.moveReaderIndex(to: buffer.writerIndex)
            context.fireChannelRead(Self.wrapInboundOut(.tooLong))
            return .needMoreData
        }
        let line = buffer.getSlice(at: buffer.readerIndex, length: length)!
        buffer.moveReaderIndex(forwardBy: newline - view.startIndex + terminatorLength)
        context.fireChannelRead(Self.wrapInboundOut(.line(line)))
        return .continue
    }

    public mutating func decodeLast(
        context: ChannelHandlerContext,
        buffer: inout ByteBuffer,
        seenEOF: Bool
    ) throws -> DecodingState {
        while try self.decode(context: context, buffer: &buffer) == .continue {}
        // What is left has no terminator. At the end of the input (the peer shut down its sending side, or closed)
        // it is the peer's last line (`printf '%s' '{"method":"status"}' | socat - UNIX-CONNECT:...`): a request like
        // any other. When the decoder is only being removed from the pipeline, the bytes are not a line, and dropped.
        if seenEOF, !self.overflowed, buffer.readableBytes > 0 {
            var length = buffer.readableBytes
            if buffer.getInteger(at: buffer.writerIndex - 1, as: UInt8.self) == UInt8(ascii: "\r") { length -= 1 }
            let line = buffer.readSlice(length: length)!
            context.fireChannelRead(Self.wrapInboundOut(.line(line)))
        }
        buffer.moveReaderIndex(to: buffer.writerIndex)
        return .needMoreData
    }
}

/// Writes byte arrays as they are (each already ends in `\n`).
public final class LineFrameEncoder: MessageToByteEncoder, Sendable {
    public typealias OutboundIn = [UInt8]
    public init() {}
    public func encode(data: [UInt8], out: inout ByteBuffer) throws {
        out.writeBytes(data)
    }
}
