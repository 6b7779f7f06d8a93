import Foundation
import PackagePlugin

/// Generates `UsherInterface.swift` (the `Method` enum, the error codes, and every request, result and type of the
/// interface) from `varlink/io.usher.Session.varlink` with the `UsherInterfaceGenerator` tool, for UsherProtocol; and
/// for UsherServer, `MethodTable.swift` (which handler answers each method, and the interface's text, which the server
/// serves byte for byte and `make install` installs: the interface has exactly one home, that file).
/// The interface file is the command's input: editing it regenerates the code and rebuilds what uses it. Nobody edits
/// the generated file; it lives in the plugin's work directory, not in the source tree.
@main
struct UsherInterfacePlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let interface = context.package.directoryURL.appending(path: "varlink/io.usher.Session.varlink")
        // UsherServer: the table of each method's handler; UsherProtocol: the methods' types.
        let server = target.name == "UsherServer"
        let name = server ? "MethodTable.swift" : "UsherInterface.swift"
        let output = context.pluginWorkDirectoryURL.appending(path: name)
        return [
            .buildCommand(
                displayName: "Generating \(name) from io.usher.Session.varlink",
                executable: try context.tool(named: "UsherInterfaceGenerator").url,
                arguments: [interface.path, output.path] + (server ? ["--method-table"] : []),
                inputFiles: [interface],
                outputFiles: [output]
            )
        ]
    }
}
