/// Why an `AppleClient` cannot be set up as configured. The message names the setting and says
/// what it should look like; it never contains key material.
public struct AppleClientConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String {
            case invalidBaseURL, insecureBaseURL, invalidSetting
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// `APPLE_BASE_URL` is not an absolute http(s) URL without credentials, query or fragment.
        public static let invalidBaseURL = Code(.invalidBaseURL)
        /// Plain `http://` to a host that is not loopback: tokens and client secrets would cross
        /// the network unencrypted.
        public static let insecureBaseURL = Code(.insecureBaseURL)
        /// A timeout, retry bound, size bound or lifetime outside its sensible range.
        public static let invalidSetting = Code(.invalidSetting)

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
