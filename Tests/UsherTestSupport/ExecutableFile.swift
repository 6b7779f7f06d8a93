import Foundation

/// Files the tests write and then run (scripts, stand-ins on `PATH`, copies of programs), put in place so that running
/// them never fails with `ETXTBSY` ("Text file busy", or bash's "bad interpreter: Text file busy").
///
/// Why not write them from the test process: the kernel refuses to execute a file that any process holds open for
/// writing. The tests start programs from many threads at once, and a child starts as a copy of the whole descriptor
/// table: a program another test spawns while this test holds the file open for writing gets a copy of that
/// descriptor, and keeps it until it closes it (`SpawnedProcess` closes every descriptor above 2) or executes (a
/// close-on-exec one). On a busy 2-core machine a child can wait that long to be scheduled at all, so the test's own
/// `execve` of the file, or a daemon's, or a shell's, fails meanwhile (issue 42: `DocumentationTests` once in three
/// runs). Close-on-exec and a rename narrow that window but do not close it; a descriptor that never exists in the
/// test process cannot leak. So a short-lived `/bin/sh` of its own writes the file under a temporary name, makes it
/// executable, and renames it into place, and this returns once that shell has exited (with its descriptors closed):
/// from then on no process holds the file open for writing, and the path names only the complete file.
package enum ExecutableFile {
    /// Writes `contents` to `path`, mode 755.
    package static func write(_ contents: String, to path: String) throws {
        try Self.run(#"printf '%s' "$2" > "$1.partial""#, path, contents)
    }

    /// Copies the file at `source` (a program) to `path`, mode 755.
    package static func copy(_ source: String, to path: String) throws {
        try Self.run(#"cat -- "$2" > "$1.partial""#, path, source)
    }

    private static func run(_ write: String, _ path: String, _ argument: String) throws {
        let script =
            #"umask 022 && rm -f -- "$1.partial" && "# + write
            + #" && chmod 755 -- "$1.partial" && mv -f -- "$1.partial" "$1""#
        let errors = try ProcessPipe()
        let shell = try SpawnedProcess(
            "/bin/sh",
            ["-c", script, "sh", path, argument],
            stderr: .descriptor(errors.writing.fileDescriptor)
        )
        try errors.writing.close()
        let status = shell.waitUntilExit()
        let message = String(decoding: errors.reading.readDataToEndOfFile(), as: UTF8.self)
        guard status == 0 else { throw TestSupportError("cannot write the executable \(path): \(message)") }
    }
}

extension TestDirectory {
    /// Writes `contents` to the file `name` in this directory, mode 755, ready to run (see `ExecutableFile`).
    package func writeExecutable(_ name: String, _ contents: String) throws {
        try ExecutableFile.write(contents, to: self.file(name))
    }
}
