import NIOCore
import NIOEmbedded
import Testing
import UsherFraming

@Suite("LineFrameDecoder")
struct LineFrameDecoderTests {
    /// A frame as text, for readable comparisons.
    private enum Frame: Equatable, CustomStringConvertible {
        case line(String)
        case tooLong

        init(_ frame: LineFrame) {
            switch frame {
            case .line(let buffer): self = .line(String(buffer: buffer))
            case .tooLong: self = .tooLong
            }
        }

        var description: String {
            switch self {
            case .line(let text): "line(\(text.debugDescription))"
            case .tooLong: "tooLong"
            }
        }
    }

    private let maximum = 16

    private func makeChannel(maximumLineLength: Int? = nil) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(
            ByteToMessageHandler(LineFrameDecoder(maximumLineLength: maximumLineLength ?? self.maximum))
        )
        return channel
    }

    /// Writes each chunk as its own read, then returns every frame decoded so far.
    private func feed(_ channel: EmbeddedChannel, _ chunks: [String]) throws -> [Frame] {
        for chunk in chunks {
            try channel.writeInbound(channel.allocator.buffer(string: chunk))
        }
        return try self.drain(channel)
    }

    private func feed(_ channel: EmbeddedChannel, bytes chunks: [[UInt8]]) throws -> [Frame] {
        for chunk in chunks {
            try channel.writeInbound(channel.allocator.buffer(bytes: chunk))
        }
        return try self.drain(channel)
    }

    private func drain(_ channel: EmbeddedChannel) throws -> [Frame] {
        var frames: [Frame] = []
        while let frame = try channel.readInbound(as: LineFrame.self) {
            frames.append(Frame(frame))
        }
        return frames
    }

    private func bytewise(_ text: String) -> [String] {
        text.map { String($0) }
    }

    // MARK: - splitting

    @Test func splitsAtNewline() throws {
        let channel = try self.makeChannel()
        #expect(try self.feed(channel, ["hello\n"]) == [.line("hello")])
        #expect(try self.feed(channel, ["world\n"]) == [.line("world")])
        #expect(try channel.finish().isClean)
    }

    @Test func stripsCarriageReturnLineFeed() throws {
        let channel = try self.makeChannel()
        #expect(try self.feed(channel, ["a\r\nb\nc\r\n"]) == [.line("a"), .line("b"), .line("c")])
        #expect(try channel.finish().isClean)
    }

    @Test func keepsOtherCarriageReturns() throws {
        let channel = try self.makeChannel()
        #expect(try self.feed(channel, ["a\rb\n", "\r\r\n", "c\r\r\n"]) == [.line("a\rb"), .line("\r"), .line("c\r")])
        #expect(try channel.finish().isClean)
    }

    @Test func emptyLines() throws {
        let channel = try self.makeChannel()
        #expect(try self.feed(channel, ["\n", "\r\n", "\n\n"]) == [.line(""), .line(""), .line(""), .line("")])
        #expect(try channel.finish().isClean)
    }

    @Test func severalLinesInOneBuffer() throws {
        let channel = try self.makeChannel()
        #expect(
            try self.feed(channel, [#"{"id":1}"# + "\n" + #"{"id":2}"# + "\r\n" + #"{"id":3}"# + "\n" + "partial"])
                == [.line(#"{"id":1}"#), .line(#"{"id":2}"#), .line(#"{"id":3}"#)]
        )
        #expect(try self.feed(channel, [" line\n"]) == [.line("partial line")])
        #expect(try channel.finish().isClean)
    }

    @Test func lineSplitByteByByte() throws {
        let channel = try self.makeChannel()
        #expect(try self.feed(channel, self.bytewise("hello\r\nworld\n")) == [.line("hello"), .line("world")])
        #expect(try channel.finish().isClean)
    }

    @Test func lineSplitOverManyWrites() throws {
        let channel = try self.makeChannel(maximumLineLength: 1_000)
        let line = String(repeating: "0123456789", count: 100)
        var chunks: [String] = []
        var rest = Substring(line + "\n")
        var size = 1
        while !rest.isEmpty {
            chunks.append(String(rest.prefix(size)))
            rest = rest.dropFirst(size)
            size = size % 7 + 1
        }
        #expect(try self.feed(channel, chunks) == [.line(line)])
        #expect(try channel.finish().isClean)
    }

    @Test func multibyteCharactersSplitAcrossWrites() throws {
        let channel = try self.makeChannel()
        let bytes = Array("é😀\n".utf8)
        #expect(try self.feed(channel, bytes: bytes.map { [$0] }) == [.line("é😀")])
        #expect(try channel.finish().isClean)
    }

    // MARK: - the length limit

    @Test func exactlyTheMaximumIsAccepted() throws {
        let line = String(repeating: "x", count: self.maximum)
        for chunks in [[line + "\n"], [line, "\n"], [line + "\r\n"], [line, "\r\n"], self.bytewise(line + "\r\n")] {
            let channel = try self.makeChannel()
            #expect(try self.feed(channel, chunks) == [.line(line)], "\(chunks)")
            #expect(try channel.finish().isClean)
        }
    }

    @Test func maximumFollowedByCarriageReturnThenNewlineInSeparateWrites() throws {
        // The `\r` that makes the buffer one byte longer than the limit may still be half of the terminator.
        let line = String(repeating: "x", count: self.maximum)
        let channel = try self.makeChannel()
        #expect(try self.feed(channel, [line]) == [])
        #expect(try self.feed(channel, ["\r"]) == [])
        #expect(try self.feed(channel, ["\n"]) == [.line(line)])
        #expect(try self.feed(channel, ["next\n"]) == [.line("next")])
        #expect(try channel.finish().isClean)
    }

    @Test func carriageReturnAtTheLimitThatIsNotATerminator() throws {
        let line = String(repeating: "x", count: self.maximum)
        for chunks in [[line, "\r", "y"], [line + "\r", "y\n"], [line + "\r\r"], [line, "\r", "\r", "\n"]] {
            let channel = try self.makeChannel()
            #expect(try self.feed(channel, chunks) == [.tooLong], "\(chunks)")
            #expect(try channel.finish().isClean)
        }
    }

    @Test func onePastTheMaximumWithoutNewline() throws {
        let channel = try self.makeChannel()
        #expect(try self.feed(channel, [String(repeating: "x", count: self.maximum)]) == [])
        #expect(try self.feed(channel, ["x"]) == [.tooLong])
        // Nothing after the overflow is decoded, not even complete lines.
        #expect(try self.feed(channel, ["more\n", "ok\n", "\n"]) == [])
        #expect(try self.feed(channel, self.bytewise("still ignored\r\n")) == [])
        #expect(try channel.finish().isClean)
    }

    @Test func onePastTheMaximumByteByByte() throws {
        let channel = try self.makeChannel()
        let frames = try self.feed(channel, self.bytewise(String(repeating: "x", count: self.maximum + 1) + "\nok\n"))
        #expect(frames == [.tooLong])
        #expect(try channel.finish().isClean)
    }

    @Test func tooLongLineWithItsNewlineInTheSameBuffer() throws {
        let channel = try self.makeChannel()
        let long = String(repeating: "x", count: self.maximum + 1)
        #expect(try self.feed(channel, ["short\n" + long + "\nafter\n"]) == [.line("short"), .tooLong])
        #expect(try self.feed(channel, ["later\n"]) == [])
        #expect(try channel.finish().isClean)
    }

    @Test func tooLongLineEndingInCarriageReturnLineFeed() throws {
        let channel = try self.makeChannel()
        let long = String(repeating: "x", count: self.maximum + 1)
        #expect(try self.feed(channel, [long + "\r\n", "after\n"]) == [.tooLong])
        #expect(try channel.finish().isClean)
    }

    @Test func aHugeWriteIsRefusedAtOnce() throws {
        let channel = try self.makeChannel()
        #expect(try self.feed(channel, [String(repeating: "x", count: 1 << 20)]) == [.tooLong])
        #expect(try channel.finish().isClean)
    }

    @Test func theLimitAppliesPerLine() throws {
        let channel = try self.makeChannel()
        let line = String(repeating: "y", count: self.maximum)
        let chunks = Array(repeating: line + "\n", count: 50)
        #expect(try self.feed(channel, [chunks.joined()]) == Array(repeating: .line(line), count: 50))
        #expect(try channel.finish().isClean)
    }

    @Test func zeroMaximumAcceptsOnlyEmptyLines() throws {
        let channel = try self.makeChannel(maximumLineLength: 0)
        #expect(try self.feed(channel, ["\n", "\r", "\n", "a"]) == [.line(""), .line(""), .tooLong])
        #expect(try channel.finish().isClean)
    }

    // MARK: - end of stream

    @Test func aLastLineWithoutItsNewlineIsALineAtTheEndOfTheInput() throws {
        // `printf '%s' '{"method":"status"}' | socat - UNIX-CONNECT:...`: the peer's last request has no terminator.
        let channel = try self.makeChannel()
        #expect(try self.feed(channel, ["one\ntwo\r"]) == [.line("one")])
        channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        #expect(try self.drain(channel) == [.line("two")])
        #expect(try channel.finish().isClean)
    }

    @Test func aPartialLineIsALineWhenTheConnectionEnds() throws {
        let channel = try self.makeChannel()
        #expect(try self.feed(channel, ["complete\n", "partial"]) == [.line("complete")])
        _ = try channel.finish()
        #expect(try self.drain(channel) == [.line("partial")])
    }

    @Test func nothingIsLeftAtTheEndOfTheInputAfterALineThatWasTooLong() throws {
        let channel = try self.makeChannel(maximumLineLength: 4)
        #expect(try self.feed(channel, ["abcdefgh"]) == [.tooLong])
        channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        #expect(try self.drain(channel) == [])
        // An empty input, or one that ended with its newline, has no last line either.
        let clean = try self.makeChannel()
        #expect(try self.feed(clean, ["a\n"]) == [.line("a")])
        clean.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        #expect(try self.drain(clean) == [])
        #expect(try clean.finish().isClean)
    }

    @Test func completeLinesBeforeEndOfStreamAreDelivered() throws {
        let channel = try self.makeChannel()
        try channel.writeInbound(channel.allocator.buffer(string: "a\nb\n"))
        channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        #expect(try self.drain(channel) == [.line("a"), .line("b")])
        #expect(try channel.finish().isClean)
    }
}
