/// What an identity token must satisfy beyond its signature (docs/apple-protocol.md §1.4). Built from server-side
/// configuration only: the audience list is never taken from a request.
public struct IdentityTokenPolicy: Sendable, Equatable {
    public static let appleIssuer = "https://appleid.apple.com"
    /// Real tokens are about a kilobyte; the bound stops hostile input before any decoding.
    public static let defaultMaxTokenLength = 8192
    /// Clock skew tolerated on `exp`, `iat` and `nbf` (Apple's `iat` can be slightly ahead of ours).
    public static let maximumLeeway: Int64 = 600

    /// A policy that cannot work: no audience, a negative or huge leeway, a silly length bound.
    public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
        public let message: String
        public var description: String { message }
    }

    public let issuer: String
    /// Client ids accepted as `aud`: the app's bundle id(s) for native sign-in and Services id(s)
    /// for web sign-in (docs/apple-protocol.md §6).
    public let allowedAudiences: Set<String>
    public let leeway: Int64
    public let maxTokenLength: Int

    public init(
        allowedAudiences: Set<String>,
        issuer: String = IdentityTokenPolicy.appleIssuer,
        leeway: Int64 = 60,
        maxTokenLength: Int = IdentityTokenPolicy.defaultMaxTokenLength
    ) throws(ConfigurationError) {
        guard !allowedAudiences.isEmpty, !allowedAudiences.contains("") else {
            throw ConfigurationError(message: "at least one non-empty client id (audience) must be allowed")
        }
        guard !issuer.isEmpty else { throw ConfigurationError(message: "the issuer must not be empty") }
        guard (0...Self.maximumLeeway).contains(leeway) else {
            throw ConfigurationError(message: "leeway must be 0 to \(Self.maximumLeeway) seconds, not \(leeway)")
        }
        guard (256...65_536).contains(maxTokenLength) else {
            throw ConfigurationError(message: "maximum token length must be 256 to 65536 bytes, not \(maxTokenLength)")
        }
        self.issuer = issuer
        self.allowedAudiences = allowedAudiences
        self.leeway = leeway
        self.maxTokenLength = maxTokenLength
    }
}
