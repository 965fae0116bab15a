import UpgradeEngine

extension EmulatedAppleClient: AppleRefreshTokenValidating {
    public func validateRefreshToken(_ refreshToken: String, clientID: String) async throws(AppleEndpointError) {
        _ = try await refresh(refreshToken, clientID: clientID)
    }
}
