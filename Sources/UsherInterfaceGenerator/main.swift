import Foundation

// UsherInterfaceGenerator INTERFACE OUTPUT: the Swift declarations of a Varlink interface (SwiftEmitter says what);
// with --method-table, the server's table of each method's handler and the interface's text it serves.
// Run by the UsherInterfacePlugin at build time; a host tool, so it may use Foundation.
let arguments = CommandLine.arguments
guard arguments.count == 3 || (arguments.count == 4 && arguments[3] == "--method-table") else {
    FileHandle.standardError.write(Data("usage: UsherInterfaceGenerator INTERFACE OUTPUT [--method-table]\n".utf8))
    exit(64)
}
do {
    let source = try String(contentsOfFile: arguments[1], encoding: .utf8)
    var parser = InterfaceParser(source)
    let interface = try parser.parse()
    var emitter = SwiftEmitter(interface)
    let swift = arguments.count == 4 ? emitter.emitMethodTable(source: source) : emitter.emit()
    // Written only when it changed, so that an unchanged interface does not rebuild what depends on it.
    if (try? String(contentsOfFile: arguments[2], encoding: .utf8)) != swift {
        try swift.write(toFile: arguments[2], atomically: true, encoding: .utf8)
    }
} catch {
    FileHandle.standardError.write(Data("\(arguments[1]): \(error)\n".utf8))
    exit(1)
}
