import Foundation
import UpgradeEngine

/// `serve --dev` and `demo`: one team, one app and one registered key at Apple's stand-in
/// (`DevelopmentApple`), and a demo account with a password and TOTP. Everything here is published
/// and insecure by design; the banner says so.
public enum DevelopmentEnvironment {
    public static let teamID = "DEVTEAM001"
    public static let keyID = "DEVKEY0001"
    public static let clientID = "com.example.siwa-upgrade"
    public static let demoUsername = "demo"
    public static let demoPassword = "demo-password"
    /// The demo account's TOTP secret (RFC 6238's SHA-1 seed), so codes can be made with
    /// `oathtool --totp --base32 GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ`.
    public static let demoTOTPSecretBase32 = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"
    public static let demoAppleUserEmail = "demo@example.com"

    /// Creates the demo account if it does not exist (password, TOTP, sealed with `secrets`).
    /// Returns whether it was created now.
    @discardableResult
    public static func ensureDemoAccount(store: any UpgradeStore, secrets: SecretBox, now: Int64) throws -> Bool {
        let hash = try PasswordHasher().hash(password: demoPassword)
        return try store.write { tx in
            guard try tx.account(username: Username(demoUsername)) == nil else { return false }
            let account = AccountRecord(
                id: UUID().uuidString.lowercased(),
                username: demoUsername,
                credentialKind: .password,
                createdAt: now,
                updatedAt: now
            )
            try tx.insertAccount(account)
            try tx.upsertPasswordCredential(
                PasswordCredentialRecord(accountID: account.id, hash: hash, format: "argon2id", updatedAt: now)
            )
            try tx.upsertTOTPEnrollment(
                TOTPEnrollmentRecord(
                    accountID: account.id,
                    secretCiphertext: secrets.seal(
                        Base32.decode(demoTOTPSecretBase32) ?? [],
                        context: UpgradeService.totpContext(accountID: account.id)
                    ),
                    algorithm: .sha1,
                    digits: 6,
                    period: 30,
                    lastAcceptedStep: nil,
                    createdAt: now
                )
            )
            try tx.appendAudit(
                AuditEvent(
                    at: now,
                    accountID: account.id,
                    upgradeID: nil,
                    event: "account.created",
                    detail: ["origin": "dev"]
                )
            )
            return true
        }
    }

    public static let banner = """
        ************************************************************************
        *  DEVELOPMENT MODE - NOT FOR PRODUCTION                               *
        *  Apple is an emulator on loopback; secrets use a published dev key;  *
        *  the demo account's password and TOTP seed are public.               *
        ************************************************************************
        """
}
