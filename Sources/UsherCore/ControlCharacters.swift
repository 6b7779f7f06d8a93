extension Unicode.Scalar {
    /// Whether this scalar is a control character that must never reach a log line, a notification to systemd or a
    /// stored claim as it is: the C0 controls (NUL, CR, LF, ESC, ...), DEL, the C1 controls (U+0080–U+009F, NEL
    /// among them), the Unicode line and paragraph separators, and the bidirectional embeddings, overrides and
    /// isolates that make a terminal show text in another order than it is stored in.
    ///
    /// Each of them can end a record early (journald splits at NUL and LF), start a forged one, drive a terminal
    /// (ESC sequences), or disguise what a line says.
    package var isControlCharacter: Bool {
        switch self.value {
        case 0x00...0x1F, 0x7F...0x9F: true
        case 0x2028, 0x2029: true
        case 0x061C, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }
}

extension StringProtocol {
    /// Whether any scalar is a control character (see `Unicode.Scalar.isControlCharacter`).
    package var containsControlCharacters: Bool {
        self.unicodeScalars.contains { $0.isControlCharacter }
    }
}

extension Authentication {
    /// The claims as usher stores them, or an error when an identifier holds a control character.
    ///
    /// The subject and the email identify the user (and the email is shown by `systemctl status` and written to logs),
    /// so one holding a line break, a NUL or an escape is refused rather than silently changed into another identity.
    /// The name is only shown: its control characters become spaces.
    ///
    /// - Throws: `ProviderError.invalidCredentials` naming the claim.
    package func checkedClaims() throws(ProviderError) -> Authentication {
        if self.subject.containsControlCharacters {
            throw .invalidCredentials("the account's subject contains a control character (such as a line break)")
        }
        if let email = self.email, email.containsControlCharacters {
            throw .invalidCredentials("the account's email contains a control character (such as a line break)")
        }
        var checked = self
        if let name = self.name, name.containsControlCharacters {
            var scalars = String.UnicodeScalarView()
            for scalar in name.unicodeScalars {
                scalars.append(scalar.isControlCharacter ? " " : scalar)
            }
            let cleaned = String(scalars).split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
            checked.name = cleaned.isEmpty ? nil : cleaned
        }
        return checked
    }
}

extension SessionRegistry {
    /// `authentication.checkedClaims()`; when the claims are refused, the session the provider has just opened is
    /// revoked first, so that a refused login leaves no live refresh token behind.
    func acceptableClaims(
        _ authentication: Authentication,
        at provider: any IdentityProvider
    ) async throws -> Authentication {
        do {
            return try authentication.checkedClaims()
        } catch {
            let session = ProviderSession(
                userID: User.id(provider: provider.name, subject: authentication.subject),
                subject: authentication.subject,
                tokens: authentication.tokens,
                providerData: authentication.providerData
            )
            _ = await provider.revoke(session)
            throw error
        }
    }
}
