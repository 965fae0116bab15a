/// Why a transfer-service call was refused. Nothing changed when one is thrown. Messages say what
/// went wrong and what to do, and never contain a token, an Apple id or an email address.
public struct TransferFailure: Error, Sendable, Equatable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String {
            case validation
            case notFound = "not-found"
            case revoked
            case conflict
            case unavailable
            case internalError = "internal"
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// Bad input: a team or client id Apple would never issue, our own team as the target, an
        /// option out of range.
        public static let validation = Code(.validation)
        /// No account is linked to this Apple id, nor waiting for it as a transfer identifier.
        public static let notFound = Code(.notFound)
        /// The account's Apple link ended (consent revoked or Apple Account deleted); it cannot be
        /// signed in to or migrated with Apple any more.
        public static let revoked = Code(.revoked)
        /// The request contradicts a recorded identity link (another account already has this Apple
        /// id, or the token's `transfer_sub` is not the one stored). Nothing is merged.
        public static let conflict = Code(.conflict)
        /// The database could not be reached; nothing changed, and the call may be retried.
        public static let unavailable = Code(.unavailable)
        /// The store failed or holds a record that cannot be read.
        public static let internalError = Code(.internalError)

        /// A stable name for reports; the REST layer maps codes to its problem types.
        public var name: String { base.rawValue }
        public var description: String { base.rawValue }
    }

    public let code: Code
    public let message: String
    /// For the server's log only: what underlay an internal failure (never a bound value or secret).
    public let cause: String?

    public init(_ code: Code, _ message: String, cause: String? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
    }

    public var description: String { "\(code.name): \(message)" }
}
