import NIOCore

/// `LineSplitter` as a NIO decoder, for a pipeline (the client library's connections).
///
/// `LineBasedFrameDecoder` from swift-nio-extras has no length limit; this one enforces `LineSplitter`'s.
public struct LineFrameDecoder: ByteToMessageDecoder {
    public typealias InboundOut = LineFrame

    private var splitter: LineSplitter

    /// - Parameter maximumLineLength: the longest line accepted, not counting its terminator.
    public init(maximumLineLength: Int) {
        self.splitter = LineSplitter(maximumLineLength: maximumLineLength)
    }

    public mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let frame = self.splitter.next(from: &buffer) else { return .needMoreData }
        context.fireChannelRead(Self.wrapInboundOut(frame))
        // After `.tooLong` nothing more is decoded.
        return frame == .tooLong ? .needMoreData : .continue
    }

    public mutating func decodeLast(
        context: ChannelHandlerContext,
        buffer: inout ByteBuffer,
        seenEOF: Bool
    ) throws -> DecodingState {
        while try self.decode(context: context, buffer: &buffer) == .continue {}
        // When the decoder is only being removed from the pipeline, the bytes left are not a line, and dropped.
        if seenEOF, let frame = self.splitter.last(from: &buffer) {
            context.fireChannelRead(Self.wrapInboundOut(frame))
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
