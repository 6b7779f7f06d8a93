import Foundation
import PackagePlugin

/// Generates `Version.swift` (`package let usherVersion = "<VERSION>"`) from the repository's `VERSION` file, for
/// every target it is applied to. The version has exactly one home, that file: `usherd --version`, `usher --version`,
/// `hello` and the Debian package (`make deb`) all read it, so none of them can drift. The file is an input of the
/// command, so editing it rebuilds what prints it.
@main
struct VersionPlugin: BuildToolPlugin {
    /// Reads VERSION, refuses anything but the characters of a Debian version (so the text cannot break out of the
    /// Swift string literal), and writes the declaration.
    static let script = """
        version=$(cat "$1") || exit 1
        case "$version" in
          "" | *[!0-9A-Za-z.+~-]*) echo "$1: not a version: '$version'" >&2; exit 1 ;;
        esac
        printf '/// Generated from VERSION by the VersionPlugin build tool: do not edit.\\n' > "$2.tmp" &&
        printf 'package let usherVersion = "%s"\\n' "$version" >> "$2.tmp" &&
        mv "$2.tmp" "$2"
        """

    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let version = context.package.directoryURL.appending(path: "VERSION")
        let output = context.pluginWorkDirectoryURL.appending(path: "Version.swift")
        return [
            .buildCommand(
                displayName: "Generating Version.swift from VERSION",
                executable: URL(fileURLWithPath: "/bin/sh"),
                arguments: ["-c", Self.script, "version", version.path, output.path],
                inputFiles: [version],
                outputFiles: [output]
            )
        ]
    }
}
