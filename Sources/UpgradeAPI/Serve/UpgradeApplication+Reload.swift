import Foundation
import UpgradeEngine

extension UpgradeApplication {
    /// What a reload did: applied with a summary of what changed, or refused with every problem
    /// (each naming its file). Neither carries a secret.
    public enum ReloadOutcome: Sendable, Equatable {
        case applied(summary: String)
        case refused(problems: [String])
    }

    /// Reads again the files `serve` was started with (`SIGHUP`; README, "Reloading configuration:
    /// SIGHUP"), all or nothing: every file is read and validated first; if one does not parse or
    /// has the wrong mode, the running configuration stays whole and one line names the problem.
    /// Otherwise each part is replaced and one line says what changed (names, counts, key ids).
    /// Requests in flight keep the snapshot they read when they started.
    @discardableResult
    public func reload() -> ReloadOutcome {
        reloading.withLock { _ in
            let loaded: ConfigurationReload
            do throws(ServerSettingsError) {
                loaded = try ConfigurationReload.load(settings)
                if let keys = loaded.secretKeys { try checkKeyring(keys) }
            } catch {
                let detail = error.problems.joined(separator: "; ")
                log.log(
                    "error",
                    "reload refused; the running configuration is unchanged",
                    [("detail", .string(detail))]
                )
                return .refused(problems: error.problems)
            }
            let summary = apply(loaded)
            log.log("info", "configuration reloaded", [("changes", .string(summary))])
            return .applied(summary: summary)
        }
    }

    /// Refuses a keyring that would leave stored values unopenable (docs/architecture.md §10.4): one
    /// that lists a running key's id with other key bytes (the values sealed under that id would no
    /// longer open, and no count could tell), or one that drops a key some stored value needs, as
    /// at start-up. A keyring that keeps every running key cannot make a value unopenable, so it is
    /// not checked against the database: a reload during a database outage still rotates the rest.
    private func checkKeyring(_ keys: SecretBox) throws(ServerSettingsError) {
        guard !secrets.isDevelopmentOnly else { return }
        let changed = secrets.keyIDsWithChangedKeys(in: keys)
        if !changed.isEmpty {
            let ids = changed.map { "'\($0)'" }.joined(separator: ", ")
            throw ServerSettingsError(problems: [
                "\(SecretKeyFile.environmentVariable): key \(ids) now holds another key than the running keyring's; "
                    + "a key id names one key for good: give the new key a new id, first in the file, and keep the old line"
            ])
        }
        let dropsKeys = !secrets.isKeptWhole(by: keys)
        let addsKeys = !keys.isKeptWhole(by: secrets)
        guard dropsKeys || addsKeys else { return }
        let problem: String?
        do {
            // An added key must open the check value another instance may have recorded for its id,
            // and the newest gets one if it has none.
            problem =
                try KeyChecks.verify(store: store, secrets: keys, now: Int64(Date().timeIntervalSince1970))
                ?? (dropsKeys ? KeyringStatus.load(store: store, secrets: keys).missingKeyProblem : nil)
        } catch {
            // Without the database an added key goes unchecked (nothing can be sealed under it until
            // the database is back, and the next start or `keys reseal` checks it); a dropped key
            // cannot be, since values may need it.
            problem =
                dropsKeys
                ? "\(SecretKeyFile.environmentVariable): cannot check the keyring against the database: \(error)" : nil
        }
        if let problem { throw ServerSettingsError(problems: [problem]) }
    }

    /// Replaces each reloaded part; returns what changed, without a secret.
    private func apply(_ loaded: ConfigurationReload) -> String {
        var changes: [String] = []
        if let tokens = loaded.adminTokens {
            let before = Set((adminTokens.current?.tokens ?? []).map(\.name))
            let after = Set(tokens.tokens.map(\.name))
            adminTokens.replace(with: tokens)
            var line = "admin tokens: \(after.count)"
            let added = after.subtracting(before).sorted()
            let removed = before.subtracting(after).sorted()
            if !added.isEmpty { line += ", added \(added.joined(separator: ","))" }
            if !removed.isEmpty { line += ", removed \(removed.joined(separator: ","))" }
            changes.append(line)
        }
        if let keys = loaded.secretKeys, !secrets.isDevelopmentOnly {
            let before = secrets.keyIDs
            // Every copy of the box (services, workers, cursors, nonces) follows at once.
            secrets.replaceKeys(with: keys)
            let after = keys.keyIDs
            // At once, not at the next heartbeat: `keys reseal` may run right after the last reload.
            recordInstance()
            changes.append(
                before == after
                    ? "keyring: unchanged (\(after.joined(separator: ",")))"
                    : "keyring: \(after.joined(separator: ",")), newest \(keys.newestKeyID) (was \(before.joined(separator: ",")))"
            )
        }
        if let secrets = loaded.webhookSecrets {
            let before = webhooks.endpoint?.secrets.count ?? 0
            webhooks.replaceSecrets(secrets)
            changes.append("webhook secrets: \(secrets.count) (were \(before))")
        }
        if let secrets = loaded.legacySecrets, let legacyVerifier {
            let before = legacyVerifier.endpoint.secrets.count
            legacyVerifier.replaceSecrets(secrets)
            changes.append("legacy-verify secrets: \(secrets.count) (were \(before))")
        }
        if let credentials = loaded.appleCredentials {
            let before = apple.client.clientSecretKeyID ?? "none"
            apple.replaceCredentials(credentials)
            changes.append("Apple key: \(credentials.keyID) (was \(before))")
        }
        if let rules = loaded.passwordRules {
            let changed = rules != service.currentPasswordRules
            service.replacePasswordRules(rules)
            changes.append("password rules: \(changed ? "changed" : "unchanged")")
        }
        return changes.isEmpty ? "nothing to reload" : changes.joined(separator: "; ")
    }
}
