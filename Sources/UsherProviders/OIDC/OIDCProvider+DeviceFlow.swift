import Logging
import Synchronization
import UsherCore
import UsherProtocol

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The device authorization flow: a code the person enters elsewhere, polled until it is approved.
extension OIDCProvider {
    // MARK: Device flow (RFC 8628)

    func beginDeviceLogin(owner: UInt32) async throws -> StartedLogin {
        let discovered = try await self.requireSupport(of: Kind.deviceCode)
        guard let endpoint = discovered.metadata.deviceAuthorizationEndpoint else {
            throw ProviderError.unsupportedCredentials("provider \(self.name) has no device flow")
        }
        try self.state.withLock { state throws(ProviderError) in try Self.admitDeviceLogin(of: owner, state) }
        let (form, headers) = self.authenticatedForm([("scope", self.scope)])
        let object: [String: JSONValue]
        do throws(OIDCFailure) {
            let response = try await self.http.post(endpoint, form: form, headers: headers)
            guard response.status == 200 else { throw response.oauthError() }
            object = try response.jsonObject(what: "the device authorization response")
        } catch {
            throw error.providerError
        }
        guard case .string(let deviceCode)? = object["device_code"], case .string(let userCode)? = object["user_code"],
            let verificationURI = object["verification_uri"]?.stringValue ?? object["verification_url"]?.stringValue
        else {
            throw ProviderError.providerError(
                error: "invalid_response",
                description: "the device authorization response lacks device_code, user_code or verification_uri"
            )
        }
        let now = self.clock.now()
        let expiresIn = object["expires_in"].flatMap(Self.integer) ?? 600
        let interval = max(1, object["interval"].flatMap(Self.integer) ?? 5)
        let expiresAt = now.adding(milliseconds: max(1, expiresIn) * 1000)
        let loginID = "\(self.name).\(SecureRandom.token(byteCount: 16))"
        // Checked again: other logins of this uid may have started during the round trip.
        try self.state.withLock { state throws(ProviderError) in
            try Self.admitDeviceLogin(of: owner, state)
            state.deviceLogins[loginID] = DeviceLogin(owner: owner, expiresAt: expiresAt)
        }
        self.background.submit { [self] in
            await self.pollDeviceLogin(loginID, deviceCode: deviceCode, interval: interval, expiresAt: expiresAt)
        }
        self.logger.info(
            "device login started",
            metadata: ["login.id": "\(Self.loggable(loginID))", "peer.uid": "\(owner)"]
        )
        return StartedLogin(
            type: .deviceCode,
            provider: self.name,
            loginID: loginID,
            verificationURI: verificationURI,
            verificationURIComplete: object["verification_uri_complete"]?.stringValue
                ?? object["verification_url_complete"]?.stringValue,
            userCode: userCode,
            expiresAt: expiresAt
        )
    }

    /// Refuses a device login when its uid has `maximumDeviceLoginsPerUID` under way already, or the provider has
    /// `maximumDeviceLogins`: each uid has its own share, so one uid cannot take every slot.
    static func admitDeviceLogin(of owner: UInt32, _ state: State) throws(ProviderError) {
        if state.deviceLogins.values.lazy.filter({ $0.owner == owner }).count >= Self.maximumDeviceLoginsPerUID {
            throw ProviderError.unavailable(
                "this uid has \(Self.maximumDeviceLoginsPerUID) device logins under way already; finish or let one "
                    + "expire first"
            )
        }
        guard state.deviceLogins.count < Self.maximumDeviceLogins else {
            throw ProviderError.unavailable("too many device logins are under way; try again later")
        }
    }

    /// A login id as the log shows it: never whole (whoever holds the id could wait for the login, were it not bound
    /// to its uid), enough of it to tell records of one login apart from another's.
    static func loggable(_ loginID: String) -> String {
        guard let dot = loginID.firstIndex(of: ".") else { return "…" }
        return String(loginID[...dot]) + String(loginID[loginID.index(after: dot)...].prefix(4)) + "…"
    }

    static func integer(_ value: JSONValue) -> Int64? {
        switch value {
        case .int(let value): value
        case .double(let value) where value.isFinite && abs(value) < 1e12: Int64(value)
        case .string(let text): Int64(text)
        default: nil
        }
    }

    /// Polls the token endpoint at the provider's interval (longer by 5 s after each `slow_down`) until the person
    /// approves or declines, or the code expires; then keeps the result for `login_wait` a while, and revokes a
    /// session nobody collected.
    func pollDeviceLogin(_ loginID: String, deviceCode: String, interval: Int64, expiresAt: Timestamp) async {
        var interval = interval
        var outcome: Result<Authentication, ProviderError>
        // One key for every poll of the login: the tokens the approving poll gets are bound to it.
        let key = self.newDPoPKey
        while true {
            do {
                try await self.clock.sleep(until: self.clock.now().adding(milliseconds: interval * 1000))
            } catch {
                outcome = .failure(.unavailable("the daemon is stopping"))
                break
            }
            guard self.clock.now() < expiresAt else {
                outcome = .failure(.expiredToken("the device code expired before the login was approved"))
                break
            }
            guard let discovered = try? await self.discovered() else { continue }
            do {
                let response = try await self.tokenResponse(
                    discovered.metadata,
                    [("grant_type", OIDCMetadata.deviceCodeGrant), ("device_code", deviceCode)],
                    dpopKey: key
                )
                outcome = .success(
                    try await self.authentication(from: response, kind: Kind.deviceCode, nonce: nil, discovered)
                )
                break
            } catch let failure as OIDCFailure {
                switch failure {
                case .oauth(_, "authorization_pending"?, _):
                    continue
                case .oauth(_, "slow_down"?, _):
                    interval += 5
                    continue
                case .unavailable(let message):
                    // The provider may come back before the code expires: keep polling.
                    self.logger.notice(
                        "device login poll failed; retrying",
                        metadata: ["login.id": "\(Self.loggable(loginID))", "error": "\(message)"]
                    )
                    continue
                default:
                    outcome = .failure(failure.providerError)
                }
                break
            } catch let error as ProviderError {
                if case .unavailable = error { continue }
                outcome = .failure(error)
                break
            } catch {
                outcome = .failure(.providerError(error: "internal", description: nil))
                break
            }
        }
        self.logger.info(
            "device login finished",
            metadata: ["login.id": "\(Self.loggable(loginID))", "outcome": "\(Self.describe(outcome))"]
        )
        let (first, others) = self.state.withLock { state in
            guard var login = state.deviceLogins[loginID] else {
                return (
                    CheckedContinuation<Authentication, any Error>?.none,
                    [CheckedContinuation<Authentication, any Error>]()
                )
            }
            login.outcome = outcome
            // The first waiter collects the session; others learn that it was collected.
            let first = login.waiters.min(by: { $0.key < $1.key })
            if let first, case .success = outcome {
                login.waiters[first.key] = nil
                login.claimed = true
            }
            let others = Array(login.waiters.values)
            login.waiters = [:]
            state.deviceLogins[loginID] = login
            return (login.claimed ? first?.value : nil, others)
        }
        first?.resume(with: outcome.mapError { $0 as any Error })
        for other in others {
            switch outcome {
            case .success: other.resume(throwing: ProviderError.expiredToken("another login_wait collected the login"))
            case .failure(let error): other.resume(throwing: error)
            }
        }
        // Keep the result for a late login_wait, then forget it; revoke a session nobody collected.
        try? await self.clock.sleep(
            until: self.clock.now().adding(milliseconds: Self.deviceResultLifetimeMilliseconds)
        )
        let uncollected = self.state.withLock { state -> Authentication? in
            let login = state.deviceLogins.removeValue(forKey: loginID)
            guard let login, !login.claimed, case .success(let authentication)? = login.outcome else { return nil }
            return authentication
        }
        if let uncollected {
            _ = await self.revoke(
                ProviderSession(
                    userID: "",
                    subject: uncollected.subject,
                    tokens: uncollected.tokens,
                    providerData: uncollected.providerData
                )
            )
        }
    }

    package func owner(ofLogin loginID: String) -> UInt32? {
        self.state.withLock { $0.deviceLogins[loginID]?.owner }
    }

    package func finishLogin(_ loginID: String) async throws -> Authentication {
        let id = self.state.withLock { state in
            state.nextWaiterID += 1
            return state.nextWaiterID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation {
                (continuation: CheckedContinuation<Authentication, any Error>) in
                let immediate: Result<Authentication, any Error>? = self.state.withLock { state in
                    guard var login = state.deviceLogins[loginID] else {
                        return .failure(ProviderError.expiredToken("the login is no longer under way"))
                    }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if let outcome = login.outcome {
                        guard !login.claimed else {
                            return .failure(ProviderError.expiredToken("the login was already collected"))
                        }
                        if case .success = outcome {
                            login.claimed = true
                            state.deviceLogins[loginID] = login
                        }
                        return outcome.mapError { $0 as any Error }
                    }
                    login.waiters[id] = continuation
                    state.deviceLogins[loginID] = login
                    return nil
                }
                if let immediate { continuation.resume(with: immediate) }
            }
        } onCancel: {
            let continuation = self.state.withLock { $0.deviceLogins[loginID]?.waiters.removeValue(forKey: id) }
            continuation?.resume(throwing: CancellationError())
        }
    }
}
