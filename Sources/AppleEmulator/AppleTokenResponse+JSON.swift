import UpgradeEngine

extension AppleTokenResponse {
    /// The `/auth/token` response body as Apple sends it (docs/apple-protocol.md §2.2); absent tokens are left out.
    public var json: JWSJSON {
        .object([
            "access_token": .string(accessToken), "token_type": .string(tokenType),
            "expires_in": .integer(Int64(expiresIn)), "refresh_token": refreshToken.map(JWSJSON.string),
            "id_token": idToken.map(JWSJSON.string),
        ])
    }
}
