import Foundation
import PackagePlugin

/// Generates `VarlinkInterfaceDescription.swift` (`package let sessionInterfaceDescription = "..."`) from
/// `varlink/io.usher.Session.varlink`, for the server, which answers `GetInterfaceDescription` with it. The interface
/// has exactly one home, that file: the daemon serves it byte for byte, `make install` installs it, and the tests
/// check every reply against it, so none of them can drift. The file is an input of the command, so editing it
/// rebuilds the server.
@main
struct VarlinkInterfacePlugin: BuildToolPlugin {
    /// Refuses a file that would end the raw string literal early, then writes the declaration around the text.
    static let script = """
        if grep -q '\"\"\"#' "$1"; then echo "$1: must not contain a raw string delimiter" >&2; exit 1; fi
        {
          printf '/// Generated from varlink/io.usher.Session.varlink by the VarlinkInterfacePlugin: do not edit.\\n'
          printf 'package let sessionInterfaceDescription = #\"\"\"\\n'
          cat "$1"
          printf '\\n\"\"\"#\\n'
        } > "$2.tmp" && mv "$2.tmp" "$2"
        """

    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let interface = context.package.directoryURL.appending(path: "varlink/io.usher.Session.varlink")
        let output = context.pluginWorkDirectoryURL.appending(path: "VarlinkInterfaceDescription.swift")
        return [
            .buildCommand(
                displayName: "Generating VarlinkInterfaceDescription.swift from io.usher.Session.varlink",
                executable: URL(fileURLWithPath: "/bin/sh"),
                arguments: ["-c", Self.script, "varlink-interface", interface.path, output.path],
                inputFiles: [interface],
                outputFiles: [output]
            )
        ]
    }
}
