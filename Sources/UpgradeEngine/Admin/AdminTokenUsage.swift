import Synchronization

/// Records when each admin token was last used (`AdminTokenUseStore`), for `upgrade-cli admin
/// tokens list`, shared among instances through the database. A token's row is written at most
/// once per `interval` by each instance, so a busy token costs one small write a minute, not one a
/// request; the time listed may therefore be up to `interval` early.
public final class AdminTokenUsage: Sendable {
    public static let defaultInterval: Int64 = 60

    let store: any UpgradeStore
    let interval: Int64
    /// When this instance last wrote each token's use, by name and creation time.
    private let written = Mutex<[String: Int64]>([:])

    public init(store: any UpgradeStore, interval: Int64 = AdminTokenUsage.defaultInterval) {
        self.store = store
        self.interval = interval
    }

    /// Notes that `token` was used at `now`; writes only when this instance has not written it in
    /// the last `interval`. Returns whether it wrote.
    @discardableResult
    public func record(_ token: AdminToken, now: Int64) throws(StorageError) -> Bool {
        let key = "\(token.name)@\(token.createdAt)"
        let due = written.withLock { written -> Bool in
            if let last = written[key], now - last < interval, now >= last { return false }
            written[key] = now
            return true
        }
        guard due else { return false }
        try store.writeStorageErrors {
            try $0.recordAdminTokenUse(name: token.name, createdAt: token.createdAt, at: now)
        }
        return true
    }

    /// The last recorded use of each token that has one.
    public static func lastUses(store: any UpgradeStore) throws(StorageError) -> [AdminTokenUseRecord] {
        try store.readStorageErrors { try $0.adminTokenUses() }
    }
}
