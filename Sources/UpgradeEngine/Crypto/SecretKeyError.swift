/// Why the at-rest sealing keys could not be loaded. The message is one line that names
/// `UPGRADE_SECRET_KEY_FILE`, says what is wrong and how to fix it, and never contains key bytes.
public struct SecretKeyError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Hashable, Sendable {
            case notConfigured
            case notFound
            case notReadable
            case notRegularFile
            case permissionsTooOpen
            case wrongSize
            case readFailed
            case malformed
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The variable is unset or empty.
        public static let notConfigured = Code(.notConfigured)
        /// Nothing exists at the path.
        public static let notFound = Code(.notFound)
        /// The file exists but this process may not read it.
        public static let notReadable = Code(.notReadable)
        /// The path is a directory, device, socket or pipe.
        public static let notRegularFile = Code(.notRegularFile)
        /// Group or others have some access to the file.
        public static let permissionsTooOpen = Code(.permissionsTooOpen)
        /// The file is neither 32 raw bytes nor text within the size a keyring may have.
        public static let wrongSize = Code(.wrongSize)
        /// Opening or reading failed for another reason.
        public static let readFailed = Code(.readFailed)
        /// A keyring line does not parse: not `ID BASE64`, a bad or repeated id, a key not of 32 bytes,
        /// or no key at all.
        public static let malformed = Code(.malformed)

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
