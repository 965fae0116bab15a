/// Why a JWK set was refused as a whole. Individual keys that are merely unusable (another key
/// type, another algorithm, too small) are skipped and listed in `JWKSet.skipped` instead.
public struct JWKSetError: Error, Sendable, Equatable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String {
            case malformed, duplicateKeyID, privateKeyMaterial, noUsableKeys
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// Not JSON, too large, or not shaped like `{"keys":[{…}, …]}`.
        public static let malformed = Code(.malformed)
        /// Two keys share a `kid`: which one a token means would be ambiguous.
        public static let duplicateKeyID = Code(.duplicateKeyID)
        /// A key carries private members (`d`, `p`, …): the wrong file was published or configured.
        public static let privateKeyMaterial = Code(.privateKeyMaterial)
        /// Nothing in the set can verify an RS256 token.
        public static let noUsableKeys = Code(.noUsableKeys)

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
