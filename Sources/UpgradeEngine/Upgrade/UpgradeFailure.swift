/// Why an upgrade call failed, in the vocabulary the REST layer renders as problem+json.
///
/// Every failure carries the extension-facing `result` (`failure`, or `twoFactorAuthRequired` after a
/// wrong code that still has tries left), and the upgrade's id and status when one exists. Messages are
/// written for the client and never contain a password, code, token, nonce or state value.
public struct UpgradeFailure: Error, Sendable, Equatable, CustomStringConvertible {
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        /// The stable slug that ends the problem `type` URI.
        public let slug: String
        /// The HTTP status the REST layer answers with.
        public let httpStatus: Int
        private init(_ slug: String, _ httpStatus: Int) {
            self.slug = slug
            self.httpStatus = httpStatus
        }
        public var description: String { slug }

        /// Wrong password or unknown username: the two look the same.
        public static let invalidCredentials = Kind("invalid-credentials", 401)
        /// Too many failures for this username (known or not); `retryAfter` says when to try again.
        public static let locked = Kind("locked", 429)
        /// The account cannot be upgraded (already Apple-only, or changed meanwhile).
        public static let notEligible = Kind("not-eligible", 409)
        public static let invalidCode = Kind("invalid-code", 401)
        /// The last allowed step-up code was wrong; the upgrade failed.
        public static let tooManyAttempts = Kind("too-many-attempts", 401)
        public static let stateMismatch = Kind("state-mismatch", 400)
        public static let nonceMismatch = Kind("nonce-mismatch", 400)
        public static let invalidIdentityToken = Kind("invalid-identity-token", 400)
        public static let subConflict = Kind("sub-conflict", 409)
        public static let upgradeExpired = Kind("upgrade-expired", 410)
        public static let notAllowedInState = Kind("not-allowed-in-state", 409)
        public static let notFound = Kind("not-found", 404)
        /// Another request is converting this upgrade right now; retrying shortly returns its result.
        public static let inProgress = Kind("upgrade-in-progress", 409)
        /// The server lost a conversion it had started (it stopped, or could not record the outcome);
        /// the account is unchanged and the upgrade is over: start a new one.
        public static let conversionInterrupted = Kind("conversion-interrupted", 409)
        /// Apple refused the authorization code: expired, already used, or issued to another client.
        public static let invalidAuthorizationCode = Kind("invalid-authorization-code", 400)
        /// Apple could not be reached or refused our client credentials (a server-side problem).
        public static let appleUnavailable = Kind("apple-unavailable", 502)
        public static let validation = Kind("validation", 422)
        public static let rateLimited = Kind("rate-limited", 429)
        public static let internalError = Kind("internal", 500)

        /// The kind that answers a machine failure reason.
        init(_ reason: UpgradeFailureReason) {
            switch reason {
            case .invalidCredentials: self = .invalidCredentials
            case .locked: self = .locked
            case .notEligible: self = .notEligible
            case .invalidCode: self = .invalidCode
            case .tooManyAttempts: self = .tooManyAttempts
            case .stateMismatch: self = .stateMismatch
            case .nonceMismatch: self = .nonceMismatch
            case .invalidIdentityToken: self = .invalidIdentityToken
            case .subConflict: self = .subConflict
            case .appleExchangeFailed: self = .appleUnavailable
            case .invalidAuthorizationCode: self = .invalidAuthorizationCode
            case .conversionInterrupted: self = .conversionInterrupted
            case .upgradeExpired: self = .upgradeExpired
            }
        }
    }

    public var kind: Kind
    public var message: String
    public var result: UpgradeResult
    public var upgradeID: String?
    public var status: UpgradeStatus?
    public var attemptsRemaining: Int?
    /// Seconds until a locked username may try again.
    public var retryAfter: Int64?

    public init(
        _ kind: Kind,
        _ message: String,
        result: UpgradeResult = .failure,
        upgradeID: String? = nil,
        status: UpgradeStatus? = nil,
        attemptsRemaining: Int? = nil,
        retryAfter: Int64? = nil
    ) {
        self.kind = kind
        self.message = message
        self.result = result
        self.upgradeID = upgradeID
        self.status = status
        self.attemptsRemaining = attemptsRemaining
        self.retryAfter = retryAfter
    }

    public var description: String { "\(kind.slug): \(message)" }
}
