import Logging
import Synchronization
import UsherCore
import UsherProtocol

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// How failures read in logs and answers.
extension OIDCProvider {
    // MARK: - Descriptions

    static func describe(_ error: any Error) -> String {
        switch error {
        case let failure as OIDCFailure: failure.summary
        case let error as ProviderError:
            switch error {
            case .unavailable(let message), .sessionRevoked(let message), .invalidCredentials(let message),
                .unsupportedCredentials(let message), .invalidParams(_, let message), .accessDenied(let message),
                .expiredToken(let message), .misconfigured(let message), .rejected(_, let message),
                .invalidToken(let message):
                message
            case .providerError(let code, let description): code + (description.map { ": \($0)" } ?? "")
            case .accountExists, .registrationDisabled, .accountUnconfirmed: "\(error)"
            }
        default: "\(error)"
        }
    }

    static func describe(_ outcome: Result<Authentication, ProviderError>) -> String {
        switch outcome {
        case .success: "approved"
        case .failure(let error): Self.describe(error)
        }
    }
}
