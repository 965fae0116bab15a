import UpgradeEngine

extension AppleTokenResponse {
    /// The `/auth/token` response body as Apple sends it (docs/apple-protocol.md §2.2); absent tokens are left out.
    public var json: JSONValue {
        .object([
            "access_token": .string(accessToken), "token_type": .string(tokenType),
            "expires_in": .integer(Int64(expiresIn)), "refresh_token": refreshToken.map(JSONValue.string),
            "id_token": idToken.map(JSONValue.string),
        ])
    }
}
