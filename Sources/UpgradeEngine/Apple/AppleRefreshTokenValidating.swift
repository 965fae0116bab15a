/// `/auth/token` with `grant_type=refresh_token`, as the Apple link check sends it for a stored
/// refresh token (docs/apple-protocol.md §2.2). The HTTPS client and the in-process emulator's
/// client both conform. `invalid_grant` means the user's authorization is gone; an error's
/// `httpStatus` is Apple's for a final answer (a 4xx other than 429); 429, 5xx and transport
/// failures are `.unavailable`, with `retryAfter` when Apple sent one.
public protocol AppleRefreshTokenValidating: Sendable {
    func validateRefreshToken(_ refreshToken: String, clientID: String) async throws(AppleEndpointError)
}

extension AppleClient: AppleRefreshTokenValidating {
    /// The answer's access and identity tokens are dropped: the check needs only to know that Apple
    /// accepted the refresh token, and an access token is never stored.
    public func validateRefreshToken(_ refreshToken: String, clientID: String) async throws(AppleEndpointError) {
        _ = try await refresh(refreshToken, clientID: clientID)
    }
}
