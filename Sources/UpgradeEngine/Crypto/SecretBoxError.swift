/// Why a sealed value could not be opened, or a key could not be used. Never carries key material,
/// plaintext or ciphertext.
public struct SecretBoxError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Hashable, Sendable {
            case invalidKeyLength
            case truncated
            case unsupportedVersion
            case authenticationFailed
            case unknownKey
            case invalidKeyring
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The key is not 32 bytes.
        public static let invalidKeyLength = Code(.invalidKeyLength)
        /// The sealed value is too short to hold a version, nonce and tag.
        public static let truncated = Code(.truncated)
        /// The sealed value's format version is not one this build can open.
        public static let unsupportedVersion = Code(.unsupportedVersion)
        /// The tag does not verify: the value was altered, sealed under another key, or sealed for
        /// another context (another row or column).
        public static let authenticationFailed = Code(.authenticationFailed)
        /// The value names a key id the keyring does not list.
        public static let unknownKey = Code(.unknownKey)
        /// A keyring without keys, with an invalid key id, or with an id listed twice.
        public static let invalidKeyring = Code(.invalidKeyring)

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
