/// Upgrade sessions inside a transaction: one record per upgrade attempt, updated by each transition.
public protocol UpgradeSessionStore {
    func insertUpgradeSession(_ session: UpgradeSessionRecord) throws(StorageError)
    func upgradeSession(id: String) throws(StorageError) -> UpgradeSessionRecord?
    /// Stores what a transition changes: status, machine, state and nonce hashes, linked `sub`, expiry,
    /// update time. The id, account, username key, service identifier and creation time are fixed
    /// when the upgrade is inserted and are left as they are.
    func updateUpgradeSession(_ session: UpgradeSessionRecord, expectedVersion: Int64) throws(StorageError)
    /// The account's upgrades whose status is not terminal (`UpgradeStatus.isTerminal`; `converting`
    /// included), oldest first, at most `limit`.
    func openUpgradeSessions(accountID: String, limit: Int) throws(StorageError) -> [UpgradeSessionRecord]
    /// Upgrades in `converting` whose claim ends at or before `time`, earliest first, at most `limit`.
    func conversions(expiringBy time: Int64, limit: Int) throws(StorageError) -> [UpgradeSessionRecord]
    /// Deletes the upgrades started for `usernameKey` while no account had it (no account id): all
    /// that is left of them names the username. An account's own upgrades go with it (a cascade).
    func deleteAccountlessUpgradeSessions(usernameKey: String) throws(StorageError)
}
