/// Why a stored password hash, or a password, could not be verified.
///
/// The message says what is wrong and how to fix it. It never contains the password, and never the
/// stored hash either: at most the format's prefix (`$2b$`, `pbkdf2_sha256$`) and the offending
/// parameter, so the error can be logged and shown to support staff as it is.
public struct PasswordHashError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable category, for callers that branch on the kind of failure (exit codes, problem types).
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Wrapped: String, Sendable, Hashable {
            case unknownFormat
            case malformed
            case parameterOutOfBounds
            case unsupported
            case invalidPassword
            case parametersUnavailable
            case internalFailure
        }

        private let wrapped: Wrapped

        private init(_ wrapped: Wrapped) {
            self.wrapped = wrapped
        }

        /// No supported format's prefix: plain text, an LDAP `{SHA}` or `{MD5}` value, an unknown scheme.
        public static let unknownFormat = Code(.unknownFormat)
        /// A supported format's prefix, but the rest does not parse strictly (lengths, alphabet, fields).
        public static let malformed = Code(.malformed)
        /// Well-formed, but a cost parameter lies outside `PasswordHashLimits`; no work was done.
        public static let parameterOutOfBounds = Code(.parameterOutOfBounds)
        /// A recognised variant this verifier deliberately does not handle (`$2x$`, argon2d, yescrypt ROM).
        public static let unsupported = Code(.unsupported)
        /// The password itself cannot be checked: longer than allowed, or containing a NUL byte that a
        /// C-string format would silently cut off.
        public static let invalidPassword = Code(.invalidPassword)
        /// The hash names a parameter set (`HashParameterSet`: Firebase scrypt, keyed HMAC) that is not
        /// stored, is of another kind, or does not open with the configured secret key: an operator
        /// problem, said without any of the set's secrets.
        public static let parametersUnavailable = Code(.parametersUnavailable)
        /// The hashing library failed for a reason that is not the input's fault (out of memory).
        public static let internalFailure = Code(.internalFailure)

        public var description: String { wrapped.rawValue }
    }

    public let code: Code
    public let message: String

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }

    static func malformed(
        _ scheme: String,
        _ problem: String,
        fix: String = "check that the stored value was exported whole and unmodified"
    ) -> PasswordHashError {
        PasswordHashError(.malformed, "malformed \(scheme) hash: \(problem); \(fix)")
    }

    static func outOfBounds<Value>(
        _ scheme: String,
        _ parameter: String,
        _ value: Value,
        allowed: String,
        limit: String
    ) -> PasswordHashError {
        // Decimal fields saturate at Int.max when parsed; say so rather than print a number not stored.
        let shown = (value as? Int) == Int.max ? "over \(Int.max)" : "\(value)"
        return PasswordHashError(
            .parameterOutOfBounds,
            "\(scheme) hash has \(parameter) = \(shown), outside the accepted \(allowed) "
                + "(PasswordHashLimits.\(limit)); "
                + "it was refused without being computed, since every guess at this account would cost that much: "
                + "export it rehashed within that limit (lower the source system's cost setting; most rehash at "
                + "the user's next sign-in there), or have the user set a new password"
        )
    }
}
