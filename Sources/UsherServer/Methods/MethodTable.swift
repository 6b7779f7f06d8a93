import UsherProtocol

extension MethodHandler {
    /// The handler of a method. Exhaustive, with no `default`: a method without a handler does not compile.
    package static func `for`(_ method: Method) -> MethodHandler {
        switch method {
        case .hello: .hello
        case .providers: .providers
        case .register: .register
        case .login: .login
        case .loginBegin: .loginBegin
        case .loginWait: .loginWait
        case .currentUser: .currentUser
        case .listUsers: .listUsers
        case .switchUser: .switchUser
        case .logout: .logout
        case .removeUser: .removeUser
        case .accessToken: .accessToken
        case .refresh: .refresh
        case .createAPIKey: .createAPIKey
        case .listAPIKeys: .listAPIKeys
        case .deleteAPIKey: .deleteAPIKey
        case .jwks: .jwks
        case .subscribe: .subscribe
        case .status: .status
        case .listSeats: .listSeats
        case .inhibit: .inhibit
        case .release: .release
        case .listLeases: .listLeases
        case .changePassword: .changePassword
        case .linkCredentials: .linkCredentials
        case .unlinkIdentity: .unlinkIdentity
        case .deleteUser: .deleteUser
        case .resetPassword: .resetPassword
        case .confirmUser: .confirmUser
        case .resendConfirmation: .resendConfirmation
        case .requestPasswordReset: .requestPasswordReset
        case .completePasswordReset: .completePasswordReset
        case .refreshProfile: .refreshProfile
        case .updateProfile: .updateProfile
        case .dpopProof: .dpopProof
        case .lockSeat: .lockSeat
        case .unlock: .unlock
        case .setPIN: .setPIN
        case .openSession: .openSession
        case .closeSession: .closeSession
        case .userStatus: .userStatus
        }
    }
}
