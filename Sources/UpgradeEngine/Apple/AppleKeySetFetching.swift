/// Apple's published keys (`GET /auth/keys`) and how long they may be cached, as the server said
/// with `Cache-Control: max-age`.
public struct AppleFetchedKeySet: Sendable {
    public let keys: JWKSet
    /// Seconds from `max-age`, 0 for `no-cache`/`no-store`, nil when the answer said nothing.
    public let maxAge: Int64?

    public init(keys: JWKSet, maxAge: Int64?) {
        self.keys = keys
        self.maxAge = maxAge
    }
}

/// Where `AppleIdentityTokenVerifier` gets the key set from: `AppleClient` over HTTPS, or a test double.
public protocol AppleKeySetFetching: Sendable {
    func fetchKeySet() async throws(AppleEndpointError) -> AppleFetchedKeySet
}
