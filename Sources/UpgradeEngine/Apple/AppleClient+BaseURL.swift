import Foundation

extension AppleClient {
    /// Where Apple's endpoints live (`APPLE_BASE_URL`): `https://appleid.apple.com`, or the emulator
    /// on a loopback address (`http://127.0.0.1:PORT`, `http://localhost:PORT`, `http://[::1]:PORT`).
    ///
    /// Plain `http` is refused for any other host, because client secrets, authorization codes and
    /// tokens travel in the requests; a path prefix is allowed (an emulator behind a proxy), while
    /// credentials, a query or a fragment are refused as signs of a pasted wrong value.
    public struct BaseURL: Sendable, Equatable, CustomStringConvertible {
        public static let apple = BaseURL(trusted: "https://appleid.apple.com")

        /// The URL without a trailing slash; endpoint paths are appended to it.
        public let string: String
        /// Whether the host is a loopback address (the emulator).
        public let isLoopback: Bool

        private static let loopbackHosts: Set<String> = ["127.0.0.1", "localhost", "[::1]", "::1"]

        private init(trusted string: String) {
            self.string = string
            self.isLoopback = false
        }

        /// `setting` and `expected` name, in messages, where the URL came from and what it should be.
        public init(
            _ text: String,
            setting: String = "APPLE_BASE_URL",
            expected: String = "https://appleid.apple.com or the emulator at http://127.0.0.1:PORT"
        ) throws(AppleClientConfigurationError) {
            func invalid(_ why: String) -> AppleClientConfigurationError {
                AppleClientConfigurationError(
                    .invalidBaseURL,
                    "\(setting) \(IdentityTokenError.quoted(text)) \(why); expected \(expected)"
                )
            }
            guard !text.isEmpty, text.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7f }) else {
                throw invalid("is empty or contains spaces or non-ASCII characters")
            }
            guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased() else {
                throw invalid("is not an absolute URL")
            }
            guard let host = components.host?.lowercased(), !host.isEmpty else { throw invalid("has no host") }
            guard components.user == nil, components.password == nil else {
                throw invalid("contains user information")
            }
            guard components.query == nil, components.fragment == nil else {
                throw invalid("has a query or fragment")
            }
            let loopback = Self.loopbackHosts.contains(host)
            switch scheme {
            case "https":
                break
            case "http" where loopback:
                break
            case "http":
                throw AppleClientConfigurationError(
                    .insecureBaseURL,
                    "\(setting) \(IdentityTokenError.quoted(text)) uses plain http to a host that is not loopback; "
                        + "use https (plain http is only for the emulator at http://127.0.0.1:PORT or http://localhost:PORT)"
                )
            default:
                throw invalid("must use https")
            }
            var path = components.percentEncodedPath
            while path.hasSuffix("/") { path.removeLast() }
            let port = components.port.map { ":\($0)" } ?? ""
            self.string = "\(scheme)://\(components.percentEncodedHost ?? host)\(port)\(path)"
            self.isLoopback = loopback
        }

        public var description: String { string }
    }
}
