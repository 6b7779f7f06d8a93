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

package struct TestSupportError: Error, CustomStringConvertible {
    package var description: String
    package init(_ description: String) { self.description = description }
}

/// Where the package's built executables are: next to the test bundle, or in `.build/debug`.
package enum BuiltProducts {
    package static func path(of product: String) throws -> String {
        if let override = ProcessInfo.processInfo.environment["USHER_BUILD_DIR"] {
            return "\(override)/\(product)"
        }
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
