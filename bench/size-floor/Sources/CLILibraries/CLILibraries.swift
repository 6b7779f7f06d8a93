import ArgumentParser

/// An option and a line of output: what swift-argument-parser (which imports FoundationEssentials) costs a program.
@main
struct CLILibraries: ParsableCommand {
    @Option var name = "world"

    func run() {
        print("hello \(self.name)")
    }
}
