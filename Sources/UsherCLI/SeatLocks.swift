import ArgumentParser
import UsherClient

/// The seat's lock: `usher lock`, `usher unlock`, `usher pin set`. The PIN is a secret: asked for on the terminal
/// without echo (or read from stdin), never taken from the command line.
extension Usher {
    struct Lock: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "lock",
            abstract: "Lock the seat: its active user's tokens are refused until usher unlock.",
            discussion: "Timers keep refreshing the tokens, so unlocking with the PIN needs no network."
        )

        @OptionGroup var options: GlobalOptions

        @Option(help: "The seat (default: yours as logind sees it, else the daemon's default seat).")
        var seat: String?

        func run() async throws {
            try await self.options.withSession { session in
                let result = try await session.perform(LockSeatRequest(seat: self.seat))
                guard !session.json else { return }
                Output.line(Terminal.escaped("Seat \(result.seat) is locked (by \(result.by ?? "usherd"))."))
            }
        }
    }

    struct Unlock: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "unlock",
            abstract: "Unlock the seat with its active user's PIN (usher pin set); no network needed.",
            discussion: """
                The PIN is asked for on the terminal, or read from the first line of stdin with --pin-stdin; never \
                from the command line. A wrong PIN counts as a failed login; after [seats] lock_after_pin_failures \
                wrong PINs in a row the user is logged out.
                """
        )

        @OptionGroup var options: GlobalOptions

        @Option(help: "The seat (default: yours as logind sees it, else the daemon's default seat).")
        var seat: String?

        @Flag(help: "Read the PIN from the first line of stdin instead of asking for it.")
        var pinStdin = false

        func run() async throws {
            // Read before connecting: a person typing does not hold a connection open.
            let pin =
                self.pinStdin
                ? try Secrets.firstLineOfStandardInput(what: "PIN")
                : try Secrets.prompt("PIN: ", what: "PIN", option: "--pin-stdin")
            try await self.options.withSession { session in
                let result = try await session.perform(UnlockRequest(seat: self.seat, pin: pin))
                guard !session.json else { return }
                Output.line(Terminal.escaped("Seat \(result.seat) is unlocked."))
            }
        }
    }

    struct PIN: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "pin",
            abstract: "Manage the PIN that unlocks a locked seat.",
            subcommands: [SetPIN.self]
        )

        struct SetPIN: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "set",
                abstract: "Set the PIN (4 to 64 characters) of the active user, or of the user named.",
                discussion: """
                    The PIN is asked for twice on the terminal without echo, or read from the first line of stdin \
                    with --pin-stdin; never from the command line. usherd keeps only a slow salted hash of it.
                    """
            )

            @OptionGroup var options: GlobalOptions

            @Argument(help: "The user's id or email (default: the active user).", completion: UserCompletion.kind)
            var user: String?

            @Flag(help: "Read the PIN from the first line of stdin instead of asking for it.")
            var pinStdin = false

            func run() async throws {
                let pin: String
                if self.pinStdin {
                    pin = try Secrets.firstLineOfStandardInput(what: "PIN")
                } else {
                    pin = try Secrets.prompt("New PIN: ", what: "PIN", option: "--pin-stdin")
                    guard try Secrets.prompt("Repeat the new PIN: ", what: "PIN", option: "--pin-stdin") == pin else {
                        throw CLIError("the PINs do not match")
                    }
                }
                guard SetPINRequest.lengths.contains(pin.count) else {
                    throw CLIError("a PIN has 4 to 64 characters")
                }
                try await self.options.withSession { session in
                    let userID = try await session.userID(for: self.user)
                    let result = try await session.perform(SetPINRequest(userID: userID, pin: pin))
                    guard !session.json else { return }
                    let who = await session.names(of: [result.userID]).first ?? result.userID
                    Output.line(Terminal.escaped("Set the PIN of \(who)."))
                }
            }
        }
    }
}
