/// Why a sign-in or a server-to-server notification was refused. Nothing changed when one is
/// thrown, except that a sign-in's nonce is spent once its token verified. Messages never contain a
/// token, a code, an Apple id or an email address.
public struct SignInFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// A stable name the REST layer maps to its HTTP status and problem slug.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, CaseIterable {
            case validation, nonceMismatch, invalidIdentityToken, invalidAuthorizationCode, appleUnavailable
            case notFound, revoked, subConflict, invalidNotification, storeUnavailable, internalError
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        public var description: String { base.rawValue }
        /// Every kind, for tables that must cover them all.
        public static let all: [Kind] = Base.allCases.map(Kind.init)

        /// The request is malformed: a field missing, empty or too long.
        public static let validation = Kind(Base.validation)
        /// The token carries no nonce, one this server did not issue, an expired one, or a spent one.
        public static let nonceMismatch = Kind(Base.nonceMismatch)
        /// The token failed verification (signature, issuer, audience, times, subject).
        public static let invalidIdentityToken = Kind(Base.invalidIdentityToken)
        /// The code is not the token's, or Apple refused it.
        public static let invalidAuthorizationCode = Kind(Base.invalidAuthorizationCode)
        /// Apple (or its signing keys) could not be reached.
        public static let appleUnavailable = Kind(Base.appleUnavailable)
        /// No account is linked to this Apple id or waiting for it as a transfer identifier.
        public static let notFound = Kind(Base.notFound)
        /// The account's Apple link ended (consent revoked, Apple Account deleted).
        public static let revoked = Kind(Base.revoked)
        /// The Apple id is linked to another account, or the account was migrated to another one.
        public static let subConflict = Kind(Base.subConflict)
        /// A notification that is not a payload Apple signed for one of our clients.
        public static let invalidNotification = Kind(Base.invalidNotification)
        /// The database did not answer; Apple retries a notification that was not acknowledged.
        public static let storeUnavailable = Kind(Base.storeUnavailable)
        /// Anything else; `cause` says why, for the log only.
        public static let internalError = Kind(Base.internalError)
    }

    public let kind: Kind
    public let message: String
    /// For the server's log only: what underlay an internal failure (never a bound value or secret).
    public let cause: String?

    public init(_ kind: Kind, _ message: String, cause: String? = nil) {
        self.kind = kind
        self.message = message
        self.cause = cause
    }

    public var description: String { "\(kind): \(message)" }

    /// A transfer-service refusal as the sign-in or notification caller sees it.
    init(_ failure: TransferFailure) {
        let kind: Kind =
            switch failure.code {
            case .notFound: .notFound
            case .revoked: .revoked
            case .conflict: .subConflict
            case .validation: .validation
            case .unavailable: .storeUnavailable
            default: .internalError
            }
        self.init(kind, failure.message, cause: failure.cause)
    }
}
