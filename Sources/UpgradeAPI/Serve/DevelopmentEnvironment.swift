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
        let request = try AccountCreationService.Request(
            username: Username(demoUsername),
            password: demoPassword,
            totp: OTPAuthURI(
                secret: Base32.decode(demoTOTPSecretBase32) ?? [],
                parameters: .standard,
                issuer: nil,
                accountName: nil
            ),
            origin: "dev"
        )
        do {
            _ = try AccountCreationService(store: store, secrets: secrets).create(request, now: now)
            return true
        } catch AccountCreationError.usernameTaken {
            return false
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
