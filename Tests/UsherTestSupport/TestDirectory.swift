import Foundation

/// A fresh directory under /tmp with a short path (Unix socket paths must stay under ~108 bytes), removed by
/// `remove()`.
package final class TestDirectory: Sendable {
    package let path: String

    package init() throws {
        var template = Array("/tmp/usher-XXXXXX".utf8CString)
        guard let result = mkdtemp(&template) else {
            throw TestSupportError("mkdtemp failed: \(String(cString: strerror(errno)))")
        }
        self.path = String(cString: result)
    }

    package func file(_ name: String) -> String { "\(self.path)/\(name)" }

    package func write(_ name: String, _ contents: String) throws {
        try contents.write(toFile: self.file(name), atomically: true, encoding: .utf8)
    }

    package func remove() {
        try? FileManager.default.removeItem(atPath: self.path)
    }
}

package struct TestSupportError: Error, CustomStringConvertible, Sendable {
    package var description: String
    package init(_ description: String) { self.description = description }
}

/// Where the package's built executables are: next to the test bundle, or in `.build/debug`; `USHER_BUILD_DIR` names
/// another directory (an installed tree, say).
///
/// `usher` is the CLI as the package installs it: the built usherd under the name `usher`, a hard link in `installed/`
/// beside it (Sources/usherd/Usherd.swift runs the CLI under any name but `usherd`), so that every test of the CLI
/// runs the program users get. The `usher` product, the CLI alone, is for development.
package enum BuiltProducts {
    package static func path(of product: String) throws -> String {
        if product == "usher", ProcessInfo.processInfo.environment["USHER_BUILD_DIR"] == nil {
            return try self.installedCLI.get()
        }
        return try self.product(product)
    }

    /// The SwiftPM product `product` as built, whatever the package installs under its name (`usher`: the CLI alone).
    package static func product(_ product: String) throws -> String {
        if let override = ProcessInfo.processInfo.environment["USHER_BUILD_DIR"] {
            return "\(override)/\(product)"
        }
        return try self.built(product)
    }

    /// Linked once per test process, from the usherd built now (a link made by an earlier run names an older file).
    private static let installedCLI = Result { () throws(TestSupportError) -> String in
        try BuiltProducts.linkInstalledCLI()
    }

    private static func linkInstalledCLI() throws(TestSupportError) -> String {
        let usherd = try self.built("usherd")
        let directory = URL(fileURLWithPath: usherd).deletingLastPathComponent().appendingPathComponent("installed")
            .path
        guard mkdir(directory, 0o755) == 0 || errno == EEXIST else {
            throw TestSupportError("cannot make \(directory): \(String(cString: strerror(errno)))")
        }
        let path = "\(directory)/usher"
        // Another test process may link at the same time: each makes its own link and renames it into place.
        let temporary = "\(directory)/.usher-\(getpid())"
        unlink(temporary)
        guard link(usherd, temporary) == 0, rename(temporary, path) == 0 else {
            throw TestSupportError("cannot link \(path) to \(usherd): \(String(cString: strerror(errno)))")
        }
        return path
    }

    private static func built(_ product: String) throws(TestSupportError) -> String {
        var candidates: [String] = []
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var directory = executable.deletingLastPathComponent()
        for _ in 0..<4 {
            candidates.append(directory.appendingPathComponent(product).path)
            directory = directory.deletingLastPathComponent()
        }
        let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        candidates.append(packageRoot.appendingPathComponent(".build/debug/\(product)").path)
        for candidate in candidates where FileManager.default.isExecutableFile(atPath: candidate) {
            return candidate
        }
        throw TestSupportError("cannot find the built \(product) (looked at \(candidates)); run swift build first")
    }
}

/// The Python that runs the OpenID Connect test servers: `USHER_TEST_PYTHON` (set by `make test`), else the virtual
/// environment `make test-deps` creates under `.build/`, else the system `/usr/bin/python3`.
package enum TestPython {
    package static var executable: String {
        if let configured = ProcessInfo.processInfo.environment["USHER_TEST_PYTHON"], !configured.isEmpty {
            return configured
        }
        let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let venv = packageRoot.appendingPathComponent(".build/test-venv/bin/python3").path
        if FileManager.default.isExecutableFile(atPath: venv) { return venv }
        return "/usr/bin/python3"
    }
}
