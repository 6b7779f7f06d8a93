import ArgumentParser
import UsherClient

extension Usher {
    /// `usher dpop-proof`: a proof for one request with a DPoP-bound token, from the daemon that holds the key.
    struct DPoPProof: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "dpop-proof",
            abstract: "Print a DPoP proof for one HTTP request with the user's DPoP-bound access token.",
            discussion: """
                The proof is signed by usherd with the key the session's tokens are bound to; the key never leaves \
                the daemon. A proof is good for one request: ask for a new one for each. With --header: \
                curl -H "$(usher token --header)" -H "$(usher dpop-proof --header --url URL)" URL. When the \
                server answers use_dpop_nonce, pass its DPoP-Nonce header with --nonce. Exit status 1 with \
                not_supported when the user's tokens are bearer tokens.
                """
        )

        @OptionGroup var options: GlobalOptions

        @Option(help: "The request's HTTP method (htm).")
        var method: String = "GET"

        @Option(help: "The request's URL (htu); its query and fragment are left out of the proof.")
        var url: String

        @Option(help: "The DPoP-Nonce the server answered with, when it asked for one.")
        var nonce: String?

        @Option(help: "The user's id (default: the active user).", completion: UserCompletion.kind)
        var user: String?

        @Option(help: "The seat (default: yours as logind sees it, else the daemon's default seat).")
        var seat: String?

        @Option(help: "For the narrowed token of this audience (as usher token --audience got it).")
        var audience: String?

        @Option(name: .customLong("scope"), help: "For the narrowed token of these scopes (as usher token --scope).")
        var scopes: [String] = []

        @Flag(help: "Print the whole header line, DPoP: <proof> (for curl -H).")
        var header = false

        func run() throws {
            let connection = try BlockingConnection(to: self.options.location)
            let request = DPoPProofRequest(
                htm: self.method,
                htu: self.url,
                nonce: self.nonce,
                userID: self.user,
                seat: self.seat,
                narrowing: TokenAudience(audience: self.audience, scopes: self.scopes.isEmpty ? nil : self.scopes)
            )
            if self.options.json {
                Output.json(try connection.sendReturningJSON(request).json)
            } else if self.header {
                Output.line("DPoP: \(try connection.send(request).proof)")
            } else {
                Output.line(try connection.send(request).proof)
            }
        }
    }
}
