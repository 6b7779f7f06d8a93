#if canImport(Glibc)
import Glibc
#endif

/// The peer's `/proc/PID/fdinfo/FD` for the descriptor through which it holds its end of the connection, opened once
/// when the peer is identified and read again from offset 0 on every check of a rule with program conditions
/// (`PeerProgram.isUnchanged`).
///
/// A file under `/proc/PID` stays bound to the process it was opened on (its `struct pid`, not the number): a read
/// fails once that process has exited, even when its pid has been given to another, and fails once the descriptor is
/// closed, as an `exec` closes a close-on-exec one. A descriptor number used again for another file shows another
/// inode, or other flags. So one `pread` answers what opening the path, reading it and closing it answered, and no path
/// is built: the check reads `/proc` twice, both without formatting a string (`/proc/PID/exe` is built once, here).
///
/// One descriptor of usherd's per identified connection (`O_CLOEXEC`), closed when the connection's `PeerProgram` goes.
package final class ConnectionWatch: Sendable, Hashable {
    /// Where the peer held the connection when it was identified.
    package let held: HeldConnection
    /// The peer's pid, for equality.
    let pid: Int32
    /// `/proc/PID/fdinfo/FD`, open.
    private let handle: CInt
    /// `/proc/PID/exe`, NUL-terminated.
    private let executablePath: [CChar]

    /// Opens `/proc/PID/fdinfo/FD` for `held`; nil when it cannot be opened (the process or its descriptor is gone).
    /// Bound to whatever process has `pid` now: the caller checks afterwards that its pinned process still runs.
    init?(pid: Int32, held: HeldConnection) {
        let handle = open("/proc/\(pid)/fdinfo/\(held.descriptor)", O_RDONLY | O_CLOEXEC)
        guard handle >= 0 else { return nil }
        self.handle = handle
        self.held = held
        self.pid = pid
        self.executablePath = Array("/proc/\(pid)/exe".utf8CString)
    }

    deinit { close(self.handle) }

    /// The descriptor as the process holds it now, when it is close-on-exec; nil when it is not, or is gone.
    func current() -> HeldConnection? {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 512) { buffer in
            let count = pread(self.handle, buffer.baseAddress, buffer.count, 0)
            guard count > 0 else { return nil }
            return Self.parse(UnsafeBufferPointer(rebasing: buffer[..<count]), descriptor: self.held.descriptor)
        }
    }

    /// The file `/proc/PID/exe` is now; nil when it cannot be read.
    func executableFile() -> ExecutableFile? {
        var status = stat()
        let result = self.executablePath.withUnsafeBufferPointer { stat($0.baseAddress!, &status) }
        return result == 0 ? ExecutableFile(status) : nil
    }

    /// Descriptor `descriptor` as its `fdinfo` text shows it, when its `flags` (octal) hold `O_CLOEXEC` and it has an
    /// `ino`; nil otherwise. Lines of exactly two fields (separated by `:`, tabs or spaces) count; the last of a name
    /// wins.
    static func parse(_ text: UnsafeBufferPointer<UInt8>, descriptor: Int32) -> HeldConnection? {
        var flags: UInt64?
        var inode: UInt64?
        var start = 0
        while start < text.count {
            var end = start
            while end < text.count, text[end] != UInt8(ascii: "\n") { end += 1 }
            if let (name, value) = Self.fields(text, start..<end) {
                if text[name].elementsEqual("flags".utf8) { flags = Self.number(text[value], radix: 8) }
                if text[name].elementsEqual("ino".utf8) { inode = Self.number(text[value], radix: 10) }
            }
            start = end + 1
        }
        guard let flags, flags & UInt64(O_CLOEXEC) != 0, let inode else { return nil }
        return HeldConnection(descriptor: descriptor, inode: inode)
    }

    /// The two fields of a line, when it has exactly two.
    private static func fields(_ text: UnsafeBufferPointer<UInt8>, _ line: Range<Int>) -> (Range<Int>, Range<Int>)? {
        var first: Range<Int>?
        var second: Range<Int>?
        var index = line.lowerBound
        while index < line.upperBound {
            while index < line.upperBound, Self.isSeparator(text[index]) { index += 1 }
            guard index < line.upperBound else { break }
            let start = index
            while index < line.upperBound, !Self.isSeparator(text[index]) { index += 1 }
            if first == nil {
                first = start..<index
            } else if second == nil {
                second = start..<index
            } else {
                return nil
            }
        }
        guard let first, let second else { return nil }
        return (first, second)
    }

    private static func isSeparator(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: ":") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: " ")
    }

    /// Digits of `radix` (8 or 10) and nothing else, that fit a `UInt64`.
    private static func number(_ digits: Slice<UnsafeBufferPointer<UInt8>>, radix: UInt64) -> UInt64? {
        guard !digits.isEmpty else { return nil }
        var value: UInt64 = 0
        for byte in digits {
            let digit = UInt64(byte &- UInt8(ascii: "0"))
            guard digit < radix else { return nil }
            let (shifted, overflowShift) = value.multipliedReportingOverflow(by: radix)
            let (sum, overflowAdd) = shifted.addingReportingOverflow(digit)
            guard !overflowShift, !overflowAdd else { return nil }
            value = sum
        }
        return value
    }

    package static func == (lhs: ConnectionWatch, rhs: ConnectionWatch) -> Bool {
        lhs.pid == rhs.pid && lhs.held == rhs.held
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(self.pid)
        hasher.combine(self.held)
    }
}
