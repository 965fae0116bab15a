import UpgradeEngine

/// A client secret whose ES256 signature verified with `key`, the key its team registered under
/// `keyID`, and the claims the emulator judges on every request.
struct VerifiedClientSecret: Sendable {
    let key: P256PublicKey
    let keyID: String
    let teamID: String
    let subject: String?
    let audience: String?
    let issuedAt: Int64?
    let expiresAt: Int64?
}
