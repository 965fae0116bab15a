import UpgradeEngine

/// Identity-token verification against the RS256 verification it wraps (same key, same signing
/// input): the parsing and claim checks around the signature should cost little next to it.
func benchmarkIdentityTokens() throws {
    let key = try RSAPrivateKey(generatingBits: 2048)
    let now: Int64 = 1_760_000_000
    let claims = JSONValue.object([
        "iss": .string("https://appleid.apple.com"), "aud": .string("com.example.siwa-upgrade"),
        "exp": .integer(now + 600), "iat": .integer(now - 30),
        "sub": .string("001234.0123456789abcdef0123456789abcdef.1234"), "nonce": .string(SecureRandom.token()),
        "c_hash": .string("9x8RgkcwXTThkHwbCnKW1A"), "email": .string("k2x9q7m4pd@privaterelay.appleid.com"),
        "email_verified": .string("true"), "is_private_email": .string("true"), "auth_time": .integer(now - 31),
        "nonce_supported": .bool(true), "real_user_status": .integer(2),
    ])
    let header = JSONValue.object(["kid": .string("Wq7kT2r"), "alg": .string("RS256")])
    let token = JWSCompact.sign(header: header, payload: claims.serialized()) { key.signRS256($0) }
    let nonce = claims["nonce"]!.stringValue!
    let verifier = IdentityTokenVerifier(
        keys: try JWKSet(keys: [("Wq7kT2r", key.publicKey)]),
        policy: try IdentityTokenPolicy(allowedAudiences: ["com.example.siwa-upgrade"])
    )
    let parts = try JWSCompact(parsing: token, maximumLength: 8192)
    let signingInput = Array(parts.signingInput)
    let signature = parts.signature
    precondition(key.publicKey.verify(signature: signature, message: signingInput))
    precondition((try? verifier.verify(token, expectedNonce: nonce, now: now)) != nil)

    // Alternate short rounds and keep each side's best, so load from other processes drifting
    // during the run cannot favour one side of the ratio.
    var rawRate = 0.0
    var tokenRate = 0.0
    for _ in 0..<5 {
        rawRate = max(rawRate, measure(0.4) { _ = key.publicKey.verify(signature: signature, message: signingInput) })
        tokenRate = max(tokenRate, measure(0.4) { _ = try? verifier.verify(token, expectedNonce: nonce, now: now) })
    }
    report("RS256 verify (\(signingInput.count)-byte signing input)", rawRate)
    report("identity token verify (\(token.utf8.count) bytes)", tokenRate, relativeTo: ("RS256 verify", rawRate))
}
