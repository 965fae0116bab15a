import UpgradeEngine

extension EmulatedAppleClient: AppleTokenRevoking {
    public func revokeRefreshToken(_ refreshToken: String, clientID: String) async throws(AppleEndpointError) {
        try emulator.revoke(form: [
            ("client_id", clientID), ("client_secret", try clientSecret(for: clientID)), ("token", refreshToken),
            ("token_type_hint", "refresh_token"),
        ])
    }
}
