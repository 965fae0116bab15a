import Foundation
import UpgradeEngine

/// `serve --dev` and `demo`: an Apple ID emulator in this process with one team, one app and one
/// registered key, and a demo account with a password and TOTP. Everything here is published and
/// insecure by design; the banner says so.
public struct DevelopmentEnvironment: Sendable {
    public static let teamID = "DEVTEAM001"
    public static let keyID = "DEVKEY0001"
    public static let clientID = "com.example.siwa-upgrade"
    public static let demoUsername = "demo"
    public static let demoPassword = "demo-password"
    /// The demo account's TOTP secret (RFC 6238's SHA-1 seed), so codes can be made with
    /// `oathtool --totp --base32 GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ`.
    public static let demoTOTPSecretBase32 = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"
    public static let demoAppleUserEmail = "demo@example.com"

    public let emulator: AppleIDEmulator
    public let connections: AppleConnections
    /// The emulator's id of the demo Apple Account (the device signs in as this user).
    public let appleUserID: String

    public init(
        clientIDs: [String],
        clock: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
    ) throws {
        emulator = AppleIDEmulator(clock: clock)
        try emulator.addTeam(Self.teamID)
        let key = P256PrivateKey()
        try emulator.registerKey(teamID: Self.teamID, keyID: Self.keyID, publicKey: key.publicKey)
        for clientID in Set(clientIDs + [Self.clientID]) {
            try emulator.addApp(clientID: clientID, teamID: Self.teamID)
        }
        appleUserID = try emulator.createUser(email: Self.demoAppleUserEmail, fullName: "Demo User")
        connections = AppleConnections(
            identityTokens: EmulatorKeys(
                emulator: emulator,
                policy: try IdentityTokenPolicy(allowedAudiences: Set(clientIDs + [Self.clientID]))
            ),
            tokens: try emulator.client(teamID: Self.teamID, keyID: Self.keyID, privateKey: key)
        )
    }

    /// Creates the demo account if it does not exist (password, TOTP, sealed with `secrets`).
    /// Returns whether it was created now.
    @discardableResult
    public static func ensureDemoAccount(store: any UpgradeStore, secrets: SecretBox, now: Int64) throws -> Bool {
        let hash = try PasswordHasher().hash(password: demoPassword)
        return try store.write { tx in
            guard try tx.account(username: demoUsername) == nil else { return false }
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
        *  Apple is an in-process emulator; secrets use a published dev key;   *
        *  the demo account's password and TOTP seed are public.               *
        ************************************************************************
        """
}
