/// Why an `otpauth://` URI was refused.
///
/// The message names the rule that was broken and how to fix the URI, and never quotes the URI or any
/// part of it: the URI carries the TOTP secret, and a malformed one may carry it anywhere. Only fixed
/// vocabulary (parameter names the parser knows, lengths in bits) appears in a message.
public struct OTPAuthURIError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Hashable, Sendable {
            case notOTPAuth
            case hotpUnsupported
            case unknownType
            case malformed
            case missingSecret
            case invalidSecret
            case secretTooShort
            case secretTooLong
            case unsupportedAlgorithm
            case unsupportedDigits
            case unsupportedPeriod
            case duplicateParameter
            case issuerMismatch
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The text does not start with `otpauth://`.
        public static let notOTPAuth = Code(.notOTPAuth)
        /// An `otpauth://hotp/` URI: counter-based codes are not supported.
        public static let hotpUnsupported = Code(.hotpUnsupported)
        /// The type is neither `totp` nor `hotp`.
        public static let unknownType = Code(.unknownType)
        /// Broken percent-encoding, invalid UTF-8, control characters, a fragment, or excessive length.
        public static let malformed = Code(.malformed)
        /// No `secret` parameter, or an empty one.
        public static let missingSecret = Code(.missingSecret)
        /// The secret is not Base32.
        public static let invalidSecret = Code(.invalidSecret)
        /// The secret is shorter than 80 bits.
        public static let secretTooShort = Code(.secretTooShort)
        /// The secret is longer than 1024 bits.
        public static let secretTooLong = Code(.secretTooLong)
        /// `algorithm` is not SHA1, SHA256 or SHA512.
        public static let unsupportedAlgorithm = Code(.unsupportedAlgorithm)
        /// `digits` is not 6 or 8.
        public static let unsupportedDigits = Code(.unsupportedDigits)
        /// `period` is not 30.
        public static let unsupportedPeriod = Code(.unsupportedPeriod)
        /// A parameter the parser reads appears more than once, so its value is ambiguous.
        public static let duplicateParameter = Code(.duplicateParameter)
        /// The label's issuer prefix and the `issuer` parameter differ.
        public static let issuerMismatch = Code(.issuerMismatch)

        public var description: String { "\(base)" }
    }

    public let code: Code
    public let message: String

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
