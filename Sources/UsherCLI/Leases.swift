import ArgumentParser
import UsherClient

extension Usher {
    struct Leases: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "leases",
            abstract: "List the leases that hold seats' active users in place (see usher inhibit)."
        )

        @OptionGroup var options: GlobalOptions

        func run() async throws {
            try await self.options.withSession { session in
                let list = try await session.perform(ListLeasesRequest())
                guard !session.json else { return }
                guard !list.leases.isEmpty else {
                    Output.line("No leases.")
                    return
                }
                let rows = list.leases.map { lease in
                    [
                        lease.lease, lease.seat, lease.mode.rawValue, lease.who, "\(lease.pid)", "\(lease.uid)",
                        Format.time(lease.since), lease.why,
                    ]
                }
                Output.lines(
                    Output.table(header: ["LEASE", "SEAT", "MODE", "WHO", "PID", "UID", "SINCE", "WHY"], rows: rows)
                )
            }
        }
    }
}
