/// Long-running provider work (discovery retries, device flow polling) run as child tasks of one task group that the
/// daemon's service group owns, instead of unstructured tasks: when the daemon stops, the group is cancelled and
/// every job with it.
///
/// Jobs submitted before `run` starts wait in a buffer; `run` starts them in order.
package final class BackgroundWork: Sendable {
    package typealias Job = @Sendable () async -> Void

    private let jobs: AsyncStream<Job>
    private let continuation: AsyncStream<Job>.Continuation

    package init() {
        (self.jobs, self.continuation) = AsyncStream.makeStream(of: Job.self, bufferingPolicy: .unbounded)
    }

    /// Queues a job. Each job should return when its task is cancelled.
    package func submit(_ job: @escaping Job) {
        self.continuation.yield(job)
    }

    /// Runs every submitted job, each as a child task, until the calling task is cancelled; then waits for the
    /// running jobs (cancelled with it) to return. Call it once.
    package func run() async {
        await withDiscardingTaskGroup { group in
            for await job in self.jobs {
                group.addTask { await job() }
            }
        }
    }
}
