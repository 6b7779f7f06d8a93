/// `hello`: who the daemon is and what this connection may do. Always allowed.
public struct HelloRequest: UsherRequest {
    public static let method = Method.hello
    public init() {}
    public init(params: Params) throws(ResponseError) {}
    public var params: Params { Params() }

    public struct Result: Sendable, Hashable, Codable {
        public var `protocol`: Int
        public var server: String
        public var version: String
        public var peer: Peer
        public var permissions: [String]

        public init(protocol: Int, server: String, version: String, peer: Peer, permissions: [String]) {
            self.protocol = `protocol`
            self.server = server
            self.version = version
            self.peer = peer
            self.permissions = permissions
        }
    }

    /// The credentials of the connected process, as the kernel reports them.
    public struct Peer: Sendable, Hashable, Codable {
        public var uid: UInt32
        public var gid: UInt32
        public var pid: Int32

        public init(uid: UInt32, gid: UInt32, pid: Int32) {
            self.uid = uid
            self.gid = gid
            self.pid = pid
        }
    }
}
