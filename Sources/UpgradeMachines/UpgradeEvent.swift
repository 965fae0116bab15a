/// Something that happened to an upgrade. The driver does the cryptography (password hash, TOTP,
/// identity token, state and nonce comparison) and reports the outcome; the machine owns the
/// policy: attempt counting, deadlines, and what each outcome leads to. No event carries a secret,
/// so events and their names are safe to log and audit.
public enum UpgradeEvent: Sendable, Hashable {
    /// The existing password was checked (`POST /v1/upgrades`).
    case passwordEvaluated(PasswordOutcome)
    /// An in-app upgrade: the extension got an empty password and passed a one-time ticket the app's
    /// backend minted for this account, and the driver spent it. It stands in for a correct password.
    /// `secondFactor` is whether a second factor must still be checked: the account has TOTP and the
    /// ticket was minted without `secondFactorVerified`.
    case ticketAccepted(secondFactor: Bool)
    /// The ticket was refused: wrong, expired, used, another account's (`invalidTicket`), the
    /// username is locked, or the account cannot be upgraded.
    case ticketRejected(reason: TicketRejection)
    /// A TOTP or recovery code was checked (`POST /v1/upgrades/{id}/step-up`).
    case stepUpEvaluated(StepUpOutcome)
    /// Apple's credential was checked: identity token signature and claims, the echoed `state`
    /// and the token's `nonce` against the issued ones, and the `sub` against existing links.
    case appleCredentialEvaluated(AppleCredentialOutcome)
    /// Apple accepted the authorization code (see ``UpgradeEffect/exchangeAuthorizationCode``).
    case authorizationCodeExchanged
    /// The code exchange or the conversion transaction failed.
    case conversionFailed(ConversionFailure)
    /// The extension called `cancelRequest(withError:)` (`POST /v1/upgrades/{id}/cancel`).
    case cancel(reason: ASExtensionErrorCode)
    /// The same account started a newer upgrade: an account has at most one open upgrade, so the
    /// older ones are cancelled (with the `failed` code) in the transaction that starts the new one.
    case superseded
    /// The account's credentials changed while this upgrade was open: the password or second factor
    /// that authorized it no longer holds (docs/architecture.md §4.4). Applied by the transaction that
    /// changes them, so an upgrade opened with the old password can never finish after the change.
    case credentialsChanged
    /// A sweeper found the state's deadline behind it. Any other event arriving late expires the
    /// upgrade just the same; this one exists so that abandoned upgrades expire without a client.
    case deadlinePassed

    public enum PasswordOutcome: Sendable, Hashable {
        /// `secondFactor` is whether the account has TOTP enrolled.
        case accepted(secondFactor: Bool)
        case rejected(reason: PasswordRejection)
    }

    public enum PasswordRejection: String, Sendable, Hashable, CaseIterable {
        case invalidCredentials
        case locked
        case notEligible
        /// The password was right when checked, but the account's credentials changed before the
        /// answer committed (the check runs outside the transaction).
        case credentialsChanged
    }

    public enum TicketRejection: String, Sendable, Hashable, CaseIterable {
        case invalidTicket
        case locked
        case notEligible
    }

    public enum StepUpOutcome: Sendable, Hashable {
        case accepted
        case rejected(reason: StepUpRejection)
    }

    public enum StepUpRejection: String, Sendable, Hashable, CaseIterable {
        /// Wrong, malformed or replayed code: counts against the attempt limit.
        case invalidCode
        /// The lockout policy locked the account meanwhile: ends the upgrade at once.
        case locked
    }

    public enum AppleCredentialOutcome: Sendable, Hashable {
        /// Every check passed; `sub` is Apple's team-scoped user id from the identity token.
        case verified(sub: String)
        case rejected(reason: AppleCredentialRejection)
    }

    public enum AppleCredentialRejection: String, Sendable, Hashable, CaseIterable {
        case stateMismatch
        case nonceMismatch
        case invalidIdentityToken
        case subConflict
        case notEligible
        /// The identity token's `c_hash` is not the authorization code's (checked before the code is used).
        case codeMismatch
    }

    public enum ConversionFailure: String, Sendable, Hashable, CaseIterable {
        /// Apple refused the code.
        case appleExchangeFailed
        /// Apple could not be reached, or failed.
        case appleUnavailable
        case subConflict
        case notEligible
        /// The `id_token` of the exchange names another user or client than the identity token.
        case codeMismatch
        /// The account's password changed after the conversion was claimed and before it committed.
        case credentialsChanged
    }

    /// An event without its outcome: what a driver asks the machine about before it does the work
    /// that produces the outcome (``UpgradeStateMachine/admission(of:now:)``).
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case passwordEvaluated, ticketAccepted, ticketRejected, stepUpEvaluated, appleCredentialEvaluated
        case authorizationCodeExchanged, conversionFailed, cancel, superseded, credentialsChanged, deadlinePassed
    }

    public var kind: Kind {
        switch self {
        case .passwordEvaluated: .passwordEvaluated
        case .ticketAccepted: .ticketAccepted
        case .ticketRejected: .ticketRejected
        case .stepUpEvaluated: .stepUpEvaluated
        case .appleCredentialEvaluated: .appleCredentialEvaluated
        case .authorizationCodeExchanged: .authorizationCodeExchanged
        case .conversionFailed: .conversionFailed
        case .cancel: .cancel
        case .superseded: .superseded
        case .credentialsChanged: .credentialsChanged
        case .deadlinePassed: .deadlinePassed
        }
    }

    /// Stable name for errors and the audit trail.
    public var name: String { kind.rawValue }
}

extension UpgradeEvent.PasswordRejection {
    var failureReason: UpgradeFailureReason {
        switch self {
        case .invalidCredentials: .invalidCredentials
        case .locked: .locked
        case .notEligible: .notEligible
        case .credentialsChanged: .credentialsChanged
        }
    }
}

extension UpgradeEvent.TicketRejection {
    var failureReason: UpgradeFailureReason {
        switch self {
        case .invalidTicket: .invalidTicket
        case .locked: .locked
        case .notEligible: .notEligible
        }
    }
}

extension UpgradeEvent.AppleCredentialRejection {
    var failureReason: UpgradeFailureReason {
        switch self {
        case .stateMismatch: .stateMismatch
        case .nonceMismatch: .nonceMismatch
        case .invalidIdentityToken: .invalidIdentityToken
        case .subConflict: .subConflict
        case .notEligible: .notEligible
        case .codeMismatch: .invalidAuthorizationCode
        }
    }
}

extension UpgradeEvent.ConversionFailure {
    var failureReason: UpgradeFailureReason {
        switch self {
        case .appleExchangeFailed: .appleExchangeFailed
        case .appleUnavailable: .appleUnavailable
        case .subConflict: .subConflict
        case .notEligible: .notEligible
        case .codeMismatch: .invalidAuthorizationCode
        case .credentialsChanged: .credentialsChanged
        }
    }
}
