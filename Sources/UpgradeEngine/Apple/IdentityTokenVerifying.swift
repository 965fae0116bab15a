/// Verifies an Apple identity token: signature with Apple's current keys, `iss`, `aud` against the
/// allow-list, `exp`/`iat` with leeway, non-empty `sub`, and the nonce against what was issued.
/// Implemented by a fixed key set (`IdentityTokenVerifier`) and by Apple's keys, fetched and cached
/// (`AppleIdentityTokenVerifier`).
public protocol IdentityTokenVerifying: Sendable {
    func verifyIdentityToken(
        _ token: String,
        nonce: IdentityTokenVerifier.NonceExpectation?,
        now: Int64
    ) async throws(IdentityTokenError) -> AppleIdentityClaims
}
