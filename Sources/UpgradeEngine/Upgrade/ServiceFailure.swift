/// Why a call into the engine's services failed (an upgrade, a password change, a sign-in, an admin
/// query or a deletion), in the vocabulary the REST layer renders as problem+json
/// (`UpgradeProblems.problem(for:)`, the one table) and the CLI prints as one line.
///
/// Every failure carries the extension-facing `result` (`failure`, or `twoFactorAuthRequired` after a
/// wrong code that still has tries left), and the upgrade's id and status when one exists. Messages are
/// written for the client and never contain a password, code, token, nonce or state value.
public struct ServiceFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, as a stable name the REST layer maps to its HTTP status and problem slug
    /// (the engine knows neither). A struct over a private enum, so kinds can be added.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, CaseIterable {
            case invalidCredentials, invalidTicket, accountNotFound, locked, notEligible, invalidCode, tooManyAttempts,
                stateMismatch, nonceMismatch
            case invalidIdentityToken, subConflict, upgradeExpired, notAllowedInState, notFound, inProgress
            case conversionInterrupted, invalidAuthorizationCode, appleUnavailable, validation, rateLimited
            case databaseUnavailable, internalError, passwordPolicy, credentialsChanged, legacyUnavailable
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The stable name, e.g. `invalidCredentials`.
        public var name: String { base.rawValue }
        public var description: String { base.rawValue }
        /// Every kind, for tables that must cover them all.
        public static let all: [Kind] = Base.allCases.map(Kind.init)

        /// Wrong password or unknown username: the two look the same.
        public static let invalidCredentials = Kind(Base.invalidCredentials)
        /// An in-app upgrade's ticket is wrong, expired, already used or another account's.
        public static let invalidTicket = Kind(Base.invalidTicket)
        /// An admin call named a username no account has (the caller is trusted, so it may know).
        public static let accountNotFound = Kind(Base.accountNotFound)
        /// Too many failures for this username (known or not); `retryAfter` says when to try again.
        public static let locked = Kind(Base.locked)
        /// The account cannot be upgraded (already Apple-only, or changed meanwhile).
        public static let notEligible = Kind(Base.notEligible)
        /// A wrong, malformed or replayed step-up code with attempts left.
        public static let invalidCode = Kind(Base.invalidCode)
        /// The last allowed step-up code was wrong; the upgrade failed.
        public static let tooManyAttempts = Kind(Base.tooManyAttempts)
        public static let stateMismatch = Kind(Base.stateMismatch)
        public static let nonceMismatch = Kind(Base.nonceMismatch)
        public static let invalidIdentityToken = Kind(Base.invalidIdentityToken)
        /// The Apple `sub` is already linked to another account.
        public static let subConflict = Kind(Base.subConflict)
        public static let upgradeExpired = Kind(Base.upgradeExpired)
        /// The call is not one the upgrade's current state takes.
        public static let notAllowedInState = Kind(Base.notAllowedInState)
        public static let notFound = Kind(Base.notFound)
        /// Another request is converting this upgrade right now; retrying shortly returns its result.
        public static let inProgress = Kind(Base.inProgress)
        /// The server lost a conversion it had started (it stopped, or could not record the outcome);
        /// the account is unchanged and the upgrade is over: start a new one.
        public static let conversionInterrupted = Kind(Base.conversionInterrupted)
        /// The code is not the identity token's, or Apple refused it: expired, used, or for another client.
        public static let invalidAuthorizationCode = Kind(Base.invalidAuthorizationCode)
        /// Apple could not be reached or refused our client credentials (a server-side problem).
        public static let appleUnavailable = Kind(Base.appleUnavailable)
        /// The request itself is malformed (a field missing, too long, of the wrong kind).
        public static let validation = Kind(Base.validation)
        /// Too many failures in a short time; `retryAfter` says when to try again.
        public static let rateLimited = Kind(Base.rateLimited)
        /// The database could not be reached; nothing changed (or, when the connection broke during
        /// a commit, the call may have completed: its retry answers from what was stored).
        public static let databaseUnavailable = Kind(Base.databaseUnavailable)
        /// A password change's new password breaks a rule of `UPGRADE_PASSWORD_RULES` (or equals the
        /// current one); the failure's `rule` names it. Nothing was checked, counted or stored.
        public static let passwordPolicy = Kind(Base.passwordPolicy)
        /// The account's credentials changed after this upgrade or password change was opened with the
        /// earlier ones: it ended and cannot go on; start a new one with the current credentials.
        public static let credentialsChanged = Kind(Base.credentialsChanged)
        /// The legacy login system, which checks this password, did not answer in time or answered
        /// something else than a verdict; nothing was counted or stored (docs/legacy-verification.md).
        public static let legacyUnavailable = Kind(Base.legacyUnavailable)
        /// The server could not complete the call (storage failed, stored data unreadable); the
        /// failure's `cause` says why, for the log only.
        public static let internalError = Kind(Base.internalError)

        /// The kind that answers a machine failure reason.
        init(_ reason: UpgradeFailureReason) {
            switch reason {
            case .invalidCredentials: self = .invalidCredentials
            case .invalidTicket: self = .invalidTicket
            case .locked: self = .locked
            case .notEligible: self = .notEligible
            case .invalidCode: self = .invalidCode
            case .tooManyAttempts: self = .tooManyAttempts
            case .stateMismatch: self = .stateMismatch
            case .nonceMismatch: self = .nonceMismatch
            case .invalidIdentityToken: self = .invalidIdentityToken
            case .subConflict: self = .subConflict
            case .appleExchangeFailed: self = .invalidAuthorizationCode
            case .appleUnavailable: self = .appleUnavailable
            case .invalidAuthorizationCode: self = .invalidAuthorizationCode
            case .conversionInterrupted: self = .conversionInterrupted
            case .upgradeExpired: self = .upgradeExpired
            case .credentialsChanged: self = .credentialsChanged
            }
        }
    }

    public var kind: Kind
    public var message: String
    public var result: UpgradeResult
    /// The upgrade's id, or the password change's.
    public var upgradeID: String?
    public var status: UpgradeStatus?
    /// A password change's status, when the failure is a password change's (`status` is then nil).
    public var passwordChangeStatus: PasswordChangeStatus?
    /// `passwordPolicy`: the rule the new password breaks, as written in the canonical rules.
    public var rule: String?
    public var attemptsRemaining: Int?
    /// Seconds until a locked username may try again.
    public var retryAfter: Int64?
    /// For the server's log only, never the client: what underlay an internal failure (a storage
    /// error's code and message, which name tables and constraints but never bound values).
    public var cause: String?
    /// The earliest moment the failure may reach the client. Set on a refused credential check
    /// (a wrong password, an unknown username, an unusable stored hash, a refused ticket, a locked
    /// username): `UpgradeServiceConfiguration.failureFloor` after the call began, whatever the
    /// account and its hash, so the answer's timing does not tell which it was (docs/architecture.md
    /// §10.3). The caller holds the answer until then; the REST layer lets its event loop do so.
    public var notBefore: ContinuousClock.Instant?

    public init(
        _ kind: Kind,
        _ message: String,
        result: UpgradeResult = .failure,
        upgradeID: String? = nil,
        status: UpgradeStatus? = nil,
        attemptsRemaining: Int? = nil,
        retryAfter: Int64? = nil,
        cause: String? = nil
    ) {
        self.kind = kind
        self.message = message
        self.result = result
        self.upgradeID = upgradeID
        self.status = status
        self.attemptsRemaining = attemptsRemaining
        self.retryAfter = retryAfter
        self.cause = cause
    }

    public var description: String { "\(kind): \(message)" }
}
