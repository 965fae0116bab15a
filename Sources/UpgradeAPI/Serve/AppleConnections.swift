import UpgradeEngine

/// How the server reaches Apple: identity-token keys and the token endpoint. Production uses
/// Apple's HTTPS endpoints; `--dev` an Apple ID emulator in the same process.
public struct AppleConnections: Sendable {
    public var identityTokens: any IdentityTokenVerifying
    public var tokens: any AppleTokenExchanging

    public init(identityTokens: any IdentityTokenVerifying, tokens: any AppleTokenExchanging) {
        self.identityTokens = identityTokens
        self.tokens = tokens
    }
}

/// The emulator's current signing keys, read at each verification so key rotation is seen at once.
public struct EmulatorKeys: IdentityTokenVerifying {
    public let emulator: AppleIDEmulator
    public let policy: IdentityTokenPolicy

    public init(emulator: AppleIDEmulator, policy: IdentityTokenPolicy) {
        self.emulator = emulator
        self.policy = policy
    }

    public func verifyIdentityToken(
        _ token: String,
        nonce: IdentityTokenVerifier.NonceExpectation?,
        now: Int64
    ) async throws(IdentityTokenError) -> AppleIdentityClaims {
        try IdentityTokenVerifier(keys: emulator.keySet, policy: policy).verify(token, nonce: nonce, now: now)
    }
}
