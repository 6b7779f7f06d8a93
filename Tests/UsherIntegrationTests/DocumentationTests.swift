import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// The documentation cannot drift from the code: every fenced example in the README and `docs/` is run, and the CLI
/// reference names what `usher --help` does.
///
/// A fenced block's language says what it is and how it is checked:
/// - `sh`: run with bash (`set -euo pipefail`) against a fresh usherd, with `USHER_SOCKET` and `S` (socat's address
///   of the socket) set and the built `usher` first on `PATH`. Stand-ins replace what a test cannot do for real:
///   `curl` prints the request it would send (there is no network), `make` checks that its targets exist
///   (`make -n`) without building.
/// - `toml`: a whole configuration; usherd must start with it.
/// - `json`: every line is one JSON value.
/// - `swift`: the code must appear, as it is, in `ClientExampleTests.swift`, which compiles and runs it.
/// - `python`: the whole of a script in `clients/python/examples/`, which `make test-python` runs (its
///   `tests/test_example.py` checks that the two are the same).
/// - `c`: a whole program, on the line after `<!-- example: NAME.c -->`, with NAME in the `EXAMPLES` of
///   clients/c/Makefile: `make test-libusher` takes it from the page, compiles it and runs it against usherd.
/// - `text`: output, pictures and commands that change the host (installing, `systemctl`); not run.
@Suite(.integrationHangGuard)
struct DocumentationTests {
    struct Block: CustomStringConvertible {
        var file: String
        var line: Int
        var language: String
        var text: String
        var description: String { "\(self.file):\(self.line) (\(self.language))" }
    }

    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The README and every page under docs/.
    static func documents() throws -> [String] {
        let pages = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("docs").path)
            .filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
        return ["README.md"] + pages
    }

    static func blocks() throws -> [Block] {
        var blocks: [Block] = []
        for document in try Self.documents() {
            let text = try String(contentsOf: root.appendingPathComponent(document), encoding: .utf8)
            var current: Block?
            for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                if line.hasPrefix("```") {
                    if let block = current {
                        blocks.append(block)
                        current = nil
                    } else {
                        let language = String(line.dropFirst(3)).trimmingCharacters(in: .whitespaces)
                        current = Block(file: document, line: index + 1, language: language, text: "")
                    }
                } else if current != nil {
                    current!.text += line + "\n"
                }
            }
            #expect(current == nil, "\(document): a fenced block is not closed")
        }
        return blocks
    }

    @Test func everyBlockSaysWhatItIs() throws {
        let blocks = try Self.blocks()
        #expect(blocks.count > 10)
        for block in blocks {
            #expect(
                ["sh", "toml", "json", "swift", "python", "c", "text"].contains(block.language),
                "\(block): say what it is"
            )
        }
    }

    @Test func cExamplesAreRunByTheCTests() throws {
        let makefile = try String(contentsOf: Self.root.appendingPathComponent("clients/c/Makefile"), encoding: .utf8)
        let examples = makefile.split(separator: "\n").first { $0.hasPrefix("EXAMPLES := ") }?
            .dropFirst("EXAMPLES := ".count).split(separator: " ").map(String.init)
        for block in try Self.blocks() where block.language == "c" {
            let text = try String(contentsOf: Self.root.appendingPathComponent(block.file), encoding: .utf8)
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            let marker = block.line >= 2 ? String(lines[block.line - 2]) : ""
            let prefix = "<!-- example: "
            let suffix = ".c -->"
            #expect(marker.hasPrefix(prefix) && marker.hasSuffix(suffix), "\(block): no example line before it")
            let name = String(marker.dropFirst(prefix.count).dropLast(suffix.count))
            #expect(examples?.contains(name) == true, "\(block): \(name) is not in clients/c/Makefile's EXAMPLES")
        }
    }

    /// What the shell examples get instead of the network and a build: programs first on PATH, so that they stand in
    /// inside `sh -c` and `usher exec` too.
    static let standIns = [
        "curl": #"""
        #!/bin/sh
        printf 'curl'; printf ' %s' "$@"; printf '\n'
        for argument in "$@"; do
            if [ "$argument" = "@-" ]; then printf 'stdin: '; cat; fi
        done
        """#,
        "make": #"""
        #!/bin/sh
        exec /usr/bin/make --no-print-directory -n -C "$REPOSITORY" "$@" > /dev/null
        """#,
    ]

    @Test func shellExamplesRun() async throws {
        let usher = try BuiltProducts.path(of: "usher")
        let bin = URL(fileURLWithPath: usher).deletingLastPathComponent().path
        for block in try Self.blocks() where block.language == "sh" {
            try await DaemonProcess.with { daemon in
                let directory = try TestDirectory()
                defer { directory.remove() }
                let standIns = directory.file("stand-ins")
                try FileManager.default.createDirectory(atPath: standIns, withIntermediateDirectories: true)
                for (name, script) in Self.standIns {
                    try directory.writeExecutable("stand-ins/" + name, script + "\n")
                }
                var environment = ProcessInfo.processInfo.environment
                environment["USHER_SOCKET"] = daemon.socketPath
                environment["S"] = "UNIX-CONNECT:" + daemon.socketPath
                environment["PATH"] = standIns + ":" + bin + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
                environment["REPOSITORY"] = Self.root.path
                environment["HOME"] = directory.path
                environment["NO_COLOR"] = "1"
                let result = try await runProcess(
                    "/bin/bash",
                    ["-c", "set -euo pipefail\ncd \(directory.path)\n" + block.text],
                    environment: environment
                )
                #expect(
                    result.status == 0,
                    "\(block) failed:\n\(block.text)\nstdout:\n\(result.stdout)\nstderr:\n\(result.stderr)"
                )
            }
        }
    }

    @Test func configurationExamplesStartTheDaemon() async throws {
        for block in try Self.blocks() where block.language == "toml" {
            do {
                try await DaemonProcess.with(config: block.text) { daemon in
                    _ = try await daemon.connect().result("status")
                }
            } catch {
                Issue.record("\(block): usherd does not start with it: \(error)\n\(block.text)")
            }
        }
    }

    @Test func jsonExamplesParse() throws {
        for block in try Self.blocks() where block.language == "json" {
            for line in block.text.split(separator: "\n") where !line.trimmingCharacters(in: .whitespaces).isEmpty {
                #expect(
                    (try? JSONDecoder().decode(JSONValue.self, from: Data(line.utf8))) != nil,
                    "\(block): not JSON: \(line)"
                )
            }
        }
    }

    @Test func swiftExamplesAreCompiledByTheirTest() throws {
        let tested = try String(
            contentsOf: Self.root.appendingPathComponent("Tests/UsherIntegrationTests/ClientExampleTests.swift"),
            encoding: .utf8
        )
        let testedLines = Set(tested.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) })
        for block in try Self.blocks() where block.language == "swift" {
            for line in block.text.split(separator: "\n") {
                let code = line.trimmingCharacters(in: .whitespaces)
                guard !code.isEmpty, !code.hasPrefix("import ") else { continue }
                #expect(testedLines.contains(code), "\(block): \(code) is not in ClientExampleTests.swift")
            }
        }
    }

    /// Every command and option of `usher --help` is in docs/cli.md, and every command in the README's list.
    @Test func theCLIReferenceNamesWhatTheHelpDoes() async throws {
        let dump = try await runProcess(try BuiltProducts.path(of: "usher"), ["--experimental-dump-help"])
        #expect(dump.status == 0, "\(dump.stderr)")
        let help = try JSONDecoder().decode(JSONValue.self, from: Data(dump.stdout.utf8))
        let reference = try String(contentsOf: Self.root.appendingPathComponent("docs/cli.md"), encoding: .utf8)
        func visit(_ command: JSONValue, path: [String]) {
            let name = command["commandName"]?.stringValue ?? ""
            let path = path + [name]
            if path.count > 1 {
                #expect(reference.contains("`" + path.joined(separator: " ")), "docs/cli.md lacks \(path)")
            }
            for argument in command["arguments"]?.arrayValue ?? [] {
                guard argument["shouldDisplay"] != false else { continue }
                for name in argument["names"]?.arrayValue ?? [] where name["kind"] == "long" {
                    let option = "--" + (name["name"]?.stringValue ?? "")
                    if ["--help", "--version"].contains(option) { continue }
                    #expect(reference.contains(option), "docs/cli.md lacks \(option) of \(path.joined(separator: " "))")
                }
            }
            for subcommand in command["subcommands"]?.arrayValue ?? [] where subcommand["commandName"] != "help" {
                visit(subcommand, path: path)
            }
        }
        visit(try #require(help["command"]), path: [])
    }
}
