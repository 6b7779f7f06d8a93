import ArgumentParser
import UsherClient

extension Usher {
    struct Seats: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "seats",
            abstract: "List the seats and each seat's active user; * marks the default seat."
        )

        @OptionGroup var options: GlobalOptions

        func run() async throws {
            try await self.options.withSession { session in
                let list = try await session.perform(ListSeatsRequest())
                guard !session.json else { return }
                let rows = list.seats.map { seat in
                    [
                        (seat.name == list.defaultSeat ? "* " : "  ") + seat.name, seat.source,
                        seat.present ? "yes" : "no", seat.userID ?? "none",
                    ]
                }
                Output.lines(Output.table(header: ["  SEAT", "SOURCE", "PRESENT", "ACTIVE USER"], rows: rows))
            }
        }
    }
}
