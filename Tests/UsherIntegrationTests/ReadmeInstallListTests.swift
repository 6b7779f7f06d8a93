import Foundation
import Testing

/// README.md names everything `make run` and `make test` install (issue 42, item 13): every package of the Makefile's
/// lists is named there, so that the list cannot fall behind the Makefile.
struct ReadmeInstallListTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The words assigned to `variable` in the Makefile (`:=`, `+=` and `=` lines), versions cut off.
    static func packages(_ variable: String, in makefile: String) -> [String] {
        makefile.split(separator: "\n").flatMap { line -> [String] in
            let parts = line.split(separator: "=", maxSplits: 1)
            guard parts.count == 2,
                parts[0].trimmingCharacters(in: CharacterSet(charactersIn: " :+")) == variable
            else { return [] }
            return parts[1].split(separator: " ").compactMap { word in
                let name = word.split(separator: "=").first.map(String.init) ?? ""
                return name.hasPrefix("$") || name.isEmpty ? nil : name
            }
        }
    }

    @Test func theReadmeNamesEveryPackageTheTwoCommandsInstall() throws {
        let makefile = try String(contentsOf: Self.root.appending(path: "Makefile"), encoding: .utf8)
        let readme = try String(contentsOf: Self.root.appending(path: "README.md"), encoding: .utf8)
        let section =
            try #require(readme.components(separatedBy: "## The two commands").dropFirst().first)
            .components(separatedBy: "\n## ").first ?? ""
        var named: [String] = []
        for variable in ["BUILD_APT_PACKAGES", "TEST_APT_PACKAGES", "PIP_PACKAGES"] {
            let packages = Self.packages(variable, in: makefile)
            #expect(!packages.isEmpty, "no \(variable) in the Makefile")
            named += packages
        }
        named.append("kubernetes-client")
        for package in named {
            #expect(section.contains("`\(package)`"), "README.md, The two commands, does not name \(package)")
        }
    }
}
