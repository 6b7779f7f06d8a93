import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// Shell completion that knows the users on the device, and manual pages that render and name every option.
@Suite(.integrationHangGuard)
struct CLICompletionAndManualTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// What bash offers for the words typed (the last one being completed), with the generated script loaded.
    static func bashCompletions(_ words: [String], daemon: DaemonProcess) async throws -> [String] {
        let usher = try BuiltProducts.path(of: "usher")
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] =
            URL(fileURLWithPath: usher).deletingLastPathComponent().path + ":"
            + (environment["PATH"] ?? "/usr/bin:/bin")
        environment["USHER_SOCKET"] = daemon.socketPath
        let quoted = words.map { "'" + $0 + "'" }.joined(separator: " ")
        let script = """
            source <(usher --generate-completion-script bash)
            COMP_WORDS=(\(quoted))
            COMP_CWORD=\(words.count - 1)
            COMP_LINE="${COMP_WORDS[*]}"
            COMP_POINT=${#COMP_LINE}
            # As `complete -F` calls it: the command, the word being completed, the word before it.
            _usher usher "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
            printf '%s\\n' "${COMPREPLY[@]}"
            """
        let result = try await runProcess("/bin/bash", ["-c", script], environment: environment)
        #expect(result.status == 0, "\(result.stderr)")
        return result.stdout.split(separator: "\n").map(String.init)
    }

    @Test func userArgumentsCompleteWithTheEmailsOnTheDevice() async throws {
        try await DaemonProcess.with { daemon in
            try await CLIScriptingTests.logIn(daemon, "joe@example.com")
            try await CLIScriptingTests.logIn(daemon, "ann@example.com")
            for words in [
                ["usher", "switch", ""], ["usher", "logout", ""], ["usher", "remove", ""],
                ["usher", "token", "--user", ""], ["usher", "exec", "--user", ""],
            ] {
                let offered = try await Self.bashCompletions(words, daemon: daemon)
                #expect(Set(offered) == ["joe@example.com", "ann@example.com"], "\(words): \(offered)")
            }
            #expect(try await Self.bashCompletions(["usher", "switch", "jo"], daemon: daemon) == ["joe@example.com"])
            // Subcommands complete too.
            #expect(try await Self.bashCompletions(["usher", "lo"], daemon: daemon).contains("login"))
        }
        // zsh and fish scripts ask the same question of usher.
        for shell in ["zsh", "fish"] {
            let script = try await runProcess(
                try BuiltProducts.path(of: "usher"),
                ["--generate-completion-script", shell]
            )
            #expect(script.status == 0)
            #expect(script.stdout.contains("---completion switch"), "\(shell)")
        }
    }

    /// Renders a page with groff, warnings on; returns the text.
    static func render(_ page: String) async throws -> String {
        let result = try await runProcess("/usr/bin/groff", ["-man", "-Tascii", "-ww", "-P-c", "-P-b", "-P-u", page])
        #expect(result.status == 0 && result.stderr.isEmpty, "\(page): \(result.stderr)")
        return result.stdout
    }

    @Test func usherdsPageNamesEveryOption() async throws {
        let page = try await Self.render(Self.root.appendingPathComponent("man/usherd.8").path)
        let help = try await runProcess(try BuiltProducts.path(of: "usherd"), ["--help"])
        let options = help.stdout.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "," })
            .filter { $0.hasPrefix("--") }.map(String.init)
        #expect(options.count >= 5, "\(help.stdout)")
        for option in Set(options) { #expect(page.contains(option), "usherd(8) lacks \(option)") }
    }

    @Test func theConfigurationPageHasEveryKeyOfTheSample() async throws {
        let directory = try TestDirectory()
        defer { directory.remove() }
        let sample = Self.root.appendingPathComponent("config/usherd.toml").path
        let generated = try await runProcess(
            "/usr/bin/awk",
            ["-f", Self.root.appendingPathComponent("man/usherd.toml.5.awk").path, sample]
        )
        #expect(generated.status == 0, "\(generated.stderr)")
        try directory.write("usherd.toml.5", generated.stdout)
        let page = try await Self.render(directory.file("usherd.toml.5"))
        // The sample's keys: `key = value`, or `# key = value` for one left at its default or an example.
        let keys = try String(contentsOfFile: sample, encoding: .utf8).split(separator: "\n").compactMap {
            (line: Substring) -> String? in
            let assignment = line.hasPrefix("# ") ? line.dropFirst(2) : line
            guard let equals = assignment.range(of: " = ") else { return nil }
            let key = assignment[..<equals.lowerBound]
            return !key.isEmpty && key.allSatisfy({ $0 == "_" || ("a"..."z").contains($0) }) ? String(key) : nil
        }
        #expect(keys.count > 40)
        for key in Set(keys) { #expect(page.contains(key + " ="), "usherd.toml(5) lacks \(key)") }
        #expect(page.contains("[providers.local.function]"))
    }
}
