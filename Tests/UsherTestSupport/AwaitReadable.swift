import Foundation

/// Returns true once `descriptor` is readable (input, its peer's end, an error, or, for a pidfd, its process's exit),
/// false at `deadline` (a hang guard).
///
/// Never blocks a thread of the cooperative pool, which every other test shares: the wait is a blocking `poll` on a
/// thread of its own, which resumes the task the moment the descriptor is ready.
package func awaitReadable(_ descriptor: Int32, until deadline: ContinuousClock.Instant) async -> Bool {
    await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
        let waiter = Thread {
            while true {
                let remaining = deadline - ContinuousClock.now
                guard remaining > .zero else { return continuation.resume(returning: false) }
                let (seconds, attoseconds) = remaining.components
                let milliseconds = Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1)
                var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                let result = poll(&poller, 1, milliseconds)
                if result < 0, errno == EINTR { continue }
                // Ready, or an error on the descriptor: what the caller does next tells which.
                return continuation.resume(returning: result != 0)
            }
        }
        waiter.start()
    }
}
