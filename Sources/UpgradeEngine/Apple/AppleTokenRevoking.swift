/// `/auth/revoke` for a stored refresh token (`token_type_hint=refresh_token`), as the revocation
/// queue sends it after an account is deleted (TN3194). The HTTPS client and the in-process
/// emulator's client both conform. An error's `httpStatus` is Apple's status for a final answer
/// (a 4xx other than 429); 429, 5xx and transport failures are `.unavailable`.
public protocol AppleTokenRevoking: Sendable {
    func revokeRefreshToken(_ refreshToken: String, clientID: String) async throws(AppleEndpointError)
}

extension AppleClient: AppleTokenRevoking {
    public func revokeRefreshToken(_ refreshToken: String, clientID: String) async throws(AppleEndpointError) {
        try await revoke(token: refreshToken, clientID: clientID, tokenTypeHint: .refreshToken)
    }
}
