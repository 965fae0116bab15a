/// Why a P-256 key was not loaded. Messages describe the key's shape, never its content.
public struct P256KeyError: Error, Sendable, Equatable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String {
            case malformed, wrongCurve
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// Not a decodable PEM / DER encoding (or an encrypted PEM).
        public static let malformed = Code(.malformed)
        /// A valid key that is not an EC key on P-256 (secp256r1).
        public static let wrongCurve = Code(.wrongCurve)

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
