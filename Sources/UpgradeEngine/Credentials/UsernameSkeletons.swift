/// The stored confusable skeletons of usernames (UTS #39 §4; docs/usernames.md): each account's
/// `username_skeleton`, against which a new username is compared, so that `ɑlice` (Latin alpha) is
/// refused beside `alice`.
///
/// ICU computes skeletons from its confusables data and does not promise the same ones from another
/// release, so the store records which release computed them. Applying migration 18 computes them
/// for every account; `db migrate` computes them all again when this binary's ICU differs from the
/// recorded one; until then account creation refuses to compare against them.
public enum UsernameSkeletons {
    /// The schema migration that adds the skeletons (`Schema/sqlite/0018_username_skeletons.sql`).
    public static let migrationVersion = 18

    /// Rows written per statement while computing every skeleton.
    static let pageSize = 1000

    /// Whether the stored skeletons are this binary's: computed, and by the same ICU release.
    public static func areCurrent(_ tx: any AccountStore) throws(StorageError) -> Bool {
        try tx.usernameSkeletonSource() == SpoofChecker.dataVersion
    }

    /// Throws unless the stored skeletons are this binary's, naming the fix.
    static func requireCurrent(_ tx: any AccountStore) throws(StorageError) {
        let stored = try tx.usernameSkeletonSource()
        guard stored != SpoofChecker.dataVersion else { return }
        throw StorageError(
            .migration,
            "the stored username skeletons were computed by \(stored ?? "no ICU release"), this binary has "
                + "\(SpoofChecker.dataVersion); run 'upgrade-cli db migrate' to compute them again"
        )
    }

    /// Computes every account's skeleton again if they are missing or another ICU release's, in the
    /// caller's transaction (the migration's). Accounts that then share a skeleton stay shared: only an
    /// operator can tell which of them, if any, is the look-alike. Returns whether it did.
    @discardableResult
    static func refreshIfStale(_ tx: any StoreTransaction) throws(StorageError) -> Bool {
        guard try !areCurrent(tx) else { return false }
        var after: String?
        while true {
            let page = try tx.accounts(afterID: after, limit: pageSize)
            try tx.setUsernameSkeletons(page.map { ($0.id, Username.skeleton(ofStored: $0.username)) })
            guard page.count == pageSize, let last = page.last else { break }
            after = last.id
        }
        // Every account is shared until here, so no intermediate state broke the unique index.
        try tx.settleSharedUsernameSkeletons()
        try tx.setUsernameSkeletonSource(SpoofChecker.dataVersion)
        return true
    }
}
