import CUsherLinux
import Glibc
import Logging
import UsherServer

extension Daemon {
    /// Binds the Varlink socket (`io.usher.Session`): handed over by systemd as the descriptor named `varlink`
    /// (`usherd-varlink.socket`, `FileDescriptorName=varlink`), else at `[daemon] varlink_socket` or next to the main
    /// socket. Nil when `varlink_socket = ""` turns it off. It serves the same dispatcher, so the same policy, limits
    /// and connection counts as the main socket.
    func bindVarlinkSocket(dispatcher: Dispatcher, tracker: ConnectionTracker) async throws -> SocketServer? {
        let address: ListenAddress
        if let descriptor = Systemd.listeningDescriptor(exactlyNamed: "varlink") {
            address = .inherited(descriptor: descriptor, path: Systemd.boundPath(of: descriptor))
        } else if let path = self.configuration.resolvedVarlinkSocketPath(socketPath: self.socketPath) {
            address = .path(path, mode: self.configuration.socketMode)
        } else {
            return nil
        }
        let server = try await SocketServer.bind(
            address,
            wire: .varlink,
            dispatcher: dispatcher,
            tracker: tracker,
            logger: self.logger
        )
        if case .path(let path, _) = address { Self.markAsVarlinkEntryPoint(path, logger: self.logger) }
        let activation = if case .inherited = address { " (socket activation)" } else { "" }
        self.logger.info(
            "Varlink interface io.usher.Session listening\(activation)",
            metadata: ["socket": "\(address.displayPath)"]
        )
        return server
    }

    /// Tags the socket `user.varlink=entrypoint`, as systemd's `XAttrEntryPoint=` does, so that tools can find
    /// Varlink entry points. Kernels before 7.0 allow no user extended attributes on sockets (EPERM): the tag is
    /// advisory, and its absence is not an error.
    private static func markAsVarlinkEntryPoint(_ path: String, logger: Logger) {
        let value = Array("entrypoint".utf8)
        let status = value.withUnsafeBytes { bytes in
            setxattr(path, "user.varlink", bytes.baseAddress, bytes.count, 0)
        }
        if status != 0 {
            logger.debug(
                "the file system keeps no user.varlink attribute on the Varlink socket",
                metadata: ["socket": "\(path)", "errno": "\(errno)"]
            )
        }
    }
}
