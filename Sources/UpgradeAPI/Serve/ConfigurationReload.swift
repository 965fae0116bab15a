import Foundation
import UpgradeEngine

/// What a reload (`SIGHUP`, `UpgradeApplication.reload()`) reads again, all of it loaded and
/// validated before any of it is used (README, "Reloading configuration: SIGHUP"): the admin
/// tokens, the secret key file, the webhook and legacy-verification secret files, the Apple key
/// (`APPLE_KEY_ID` or `APPLE_KEY_ID_FILE`, with `APPLE_PRIVATE_KEY_FILE`) and the password rules
/// file. The paths are those `serve` started with; the contents are the files' now. A value set
/// directly (`APPLE_KEY_ID`, `UPGRADE_PASSWORD_RULES`) keeps its start-up value.
struct ConfigurationReload {
    /// Each part is nil when its setting is unset (nothing to read again).
    var adminTokens: AdminTokenSet?
    var secretKeys: SecretBox?
    var webhookSecrets: WebhookSecrets?
    var legacySecrets: WebhookSecrets?
    var appleCredentials: AppleClient.Credentials?
    var passwordRules: PasswordRules?

    /// Reads every file `settings` names. Throws every problem found, each naming its file and
    /// never its content.
    static func load(_ settings: ServerSettings) throws(ServerSettingsError) -> ConfigurationReload {
        var problems: [String] = []
        var loaded = ConfigurationReload()
        if let path = settings.adminTokensFile {
            do { loaded.adminTokens = try AdminTokenFile.load(path: path) } catch { problems.append(error.message) }
        }
        if let path = settings.secretKeyFile {
            do { loaded.secretKeys = try SecretKeyFile.load(path: path) } catch { problems.append(error.message) }
        }
        if let path = settings.webhookSecretFile {
            do { loaded.webhookSecrets = try WebhookSecrets.load(path: path) } catch { problems.append(error.message) }
        }
        if let path = settings.legacyVerifySecretFile {
            do {
                loaded.legacySecrets = try WebhookSecrets.load(
                    path: path,
                    variable: "UPGRADE_LEGACY_VERIFY_SECRET_FILE"
                )
            } catch {
                problems.append(error.message)
            }
        }
        // `--dev` signs with the emulator's key, whatever the files say.
        if !settings.development, let teamID = settings.teamID, let path = settings.privateKeyFile {
            var keyID = settings.keyID
            if let idPath = settings.keyIDFile {
                switch ServerSettings.readKeyID(path: idPath) {
                case .success(let id): keyID = id
                case .failure(let problem): problems += problem.problems
                }
            }
            switch ServerSettings.readPrivateKey(path: path) {
            case .success(let key):
                if let keyID {
                    do {
                        loaded.appleCredentials = try AppleClient.Credentials(
                            teamID: teamID,
                            keyID: keyID,
                            privateKey: key
                        )
                    } catch {
                        problems.append("APPLE_PRIVATE_KEY_FILE: \(path): \(error)")
                    }
                }
            case .failure(let problem): problems += problem.problems
            }
        }
        if let path = settings.passwordRulesFile {
            switch ServerSettings.readPasswordRules(path: path) {
            case .success(let rules): loaded.passwordRules = rules
            case .failure(let problem): problems += problem.problems
            }
        }
        guard problems.isEmpty else { throw ServerSettingsError(problems: problems) }
        return loaded
    }
}
