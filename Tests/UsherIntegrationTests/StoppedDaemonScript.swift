/// Python for the tests that stop usherd so that what a peer does happens in an order they know (a connection made,
/// then an exec, before usherd accepts it): the part each of their scripts begins with.
enum StoppedDaemonScript {
    /// `stop_daemon(pid)`: SIGSTOP, then waits until every thread of the daemon is in state T (`kill` returns before
    /// they have all stopped, and one still running could accept the connection meanwhile). The script goes on with
    /// `os.kill(pid, signal.SIGCONT)` in a `finally`.
    static let functions = """
        import os, signal


        def stop_daemon(daemon):
            os.kill(daemon, signal.SIGSTOP)
            while not all_threads_stopped(daemon):
                os.sched_yield()


        def all_threads_stopped(daemon):
            for task in os.listdir(f'/proc/{daemon}/task'):
                try:
                    with open(f'/proc/{daemon}/task/{task}/stat') as stat:
                        state = stat.read().rsplit(')', 1)[1].split()[0]
                except FileNotFoundError:
                    continue
                if state not in ('T', 't'):
                    return False
            return True
        """
}
