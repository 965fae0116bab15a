/// Why an RSA key was not loaded. Messages describe the key's shape (size, exponent, encoding),
/// never its content.
public struct RSAKeyError: Error, Sendable, Equatable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String {
            case malformed, notRSA, tooSmall, tooLarge, badExponent, badModulus
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// Not a decodable PEM / DER / JWK encoding (or an encrypted PEM).
        public static let malformed = Code(.malformed)
        /// A valid key of another type (EC, RSA-PSS...).
        public static let notRSA = Code(.notRSA)
        /// Modulus below 2048 bits.
        public static let tooSmall = Code(.tooSmall)
        /// Modulus above 8192 bits.
        public static let tooLarge = Code(.tooLarge)
        /// Public exponent even, below 3 or above 32 bits.
        public static let badExponent = Code(.badExponent)
        /// Even modulus: no RSA key has one.
        public static let badModulus = Code(.badModulus)

        public var description: String { base.rawValue }
    }

    public let code: Code
    public let message: String

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
