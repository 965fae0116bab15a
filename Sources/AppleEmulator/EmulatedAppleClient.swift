import UpgradeEngine

/// A team's client of the emulator: it makes a real ES256 client secret with
/// `ClientSecretSigner` for every call and sends it through the emulator's endpoint code, so the
/// whole path — secret, validation, grant — runs as it would against Apple.
///
/// Obtain one with `AppleIDEmulator.client(teamID:keyID:privateKey:)`.
public struct EmulatedAppleClient: AppleTokenExchanging {
    public let emulator: AppleIDEmulator
    public let teamID: String
    public let keyID: String
    private let privateKey: P256PrivateKey

    init(emulator: AppleIDEmulator, teamID: String, keyID: String, privateKey: P256PrivateKey) {
        self.emulator = emulator
        self.teamID = teamID
        self.keyID = keyID
        self.privateKey = privateKey
    }

    /// A fresh client secret for `clientID`, short-lived.
    func clientSecret(for clientID: String) throws(AppleEndpointError) -> String {
        do {
            let signer = try ClientSecretSigner(
                teamID: teamID,
                keyID: keyID,
                clientID: clientID,
                privateKey: privateKey
            )
            return try signer.make(now: emulator.clock(), lifetime: 300)
        } catch {
            throw AppleEndpointError(
                code: .invalidClient,
                httpStatus: nil,
                message: "cannot make a client secret: \(error)"
            )
        }
    }

    public func exchangeAuthorizationCode(
        _ code: String,
        clientID: String
    ) async throws(AppleEndpointError) -> AppleTokenResponse {
        try await exchangeAuthorizationCode(code, clientID: clientID, redirectURI: nil)
    }

    /// `redirect_uri` must be sent when (and only when) the authorization request had one (web).
    public func exchangeAuthorizationCode(
        _ code: String,
        clientID: String,
        redirectURI: String?
    ) async throws(AppleEndpointError) -> AppleTokenResponse {
        var form: [(name: String, value: String)] = [
            ("client_id", clientID), ("client_secret", try clientSecret(for: clientID)), ("code", code),
            ("grant_type", "authorization_code"),
        ]
        if let redirectURI { form.append(("redirect_uri", redirectURI)) }
        return try emulator.token(form: form)
    }

    /// `grant_type=refresh_token`: a new access token and identity token, no new refresh token.
    public func refresh(_ refreshToken: String, clientID: String) async throws(AppleEndpointError) -> AppleTokenResponse
    {
        try emulator.token(form: [
            ("client_id", clientID), ("client_secret", try clientSecret(for: clientID)),
            ("grant_type", "refresh_token"), ("refresh_token", refreshToken),
        ])
    }

    /// `grant_type=client_credentials`, `scope=user.migration`: the team's access token for
    /// `/auth/usermigrationinfo`.
    public func teamAccessToken(clientID: String) async throws(AppleEndpointError) -> AppleTokenResponse {
        try emulator.token(form: [
            ("client_id", clientID), ("client_secret", try clientSecret(for: clientID)),
            ("grant_type", "client_credentials"), ("scope", "user.migration"),
        ])
    }

    public func revoke(token: String, clientID: String) async throws(AppleEndpointError) {
        try emulator.revoke(form: [
            ("client_id", clientID), ("client_secret", try clientSecret(for: clientID)), ("token", token),
        ])
    }

    /// Sender team: the `transfer_sub` of `sub` for the recipient team `target`.
    public func transferSub(
        forSub sub: String,
        target: String,
        clientID: String,
        accessToken: String
    ) async throws(AppleEndpointError) -> String {
        let answer = try emulator.userMigrationInfo(
            form: [
                ("sub", sub), ("target", target), ("client_id", clientID),
                ("client_secret", try clientSecret(for: clientID)),
            ],
            authorization: "Bearer \(accessToken)"
        )
        guard case .transferSub(let transferSub) = answer else {
            throw AppleEndpointError(code: .unavailable, httpStatus: 200, message: "unexpected migration answer")
        }
        return transferSub
    }

    /// Recipient team: the new `sub` (and relay email) for a `transfer_sub`.
    public func migrate(
        transferSub: String,
        clientID: String,
        accessToken: String
    ) async throws(AppleEndpointError) -> AppleMigratedUser {
        let answer = try emulator.userMigrationInfo(
            form: [
                ("transfer_sub", transferSub), ("client_id", clientID),
                ("client_secret", try clientSecret(for: clientID)),
            ],
            authorization: "Bearer \(accessToken)"
        )
        guard case .migratedUser(let user) = answer else {
            throw AppleEndpointError(code: .unavailable, httpStatus: 200, message: "unexpected migration answer")
        }
        return user
    }
}

extension AppleIDEmulator {
    /// A client for `teamID` that signs with `privateKey` under `keyID`. The key must have been
    /// registered with `registerKey` for the emulator to accept its secrets.
    public func client(
        teamID: String,
        keyID: String,
        privateKey: P256PrivateKey
    ) throws(AppleEmulatorError)
        -> EmulatedAppleClient
    {
        guard ClientSecretSigner.isAppleIdentifier(teamID), ClientSecretSigner.isAppleIdentifier(keyID) else {
            throw AppleEmulatorError(.invalidIdentifier, "team and key ids are 10 characters A-Z or 0-9")
        }
        return EmulatedAppleClient(emulator: self, teamID: teamID, keyID: keyID, privateKey: privateKey)
    }
}
