/// When each admin token was last used, shared by every server on the database. A token is named
/// by its name and creation time.
public protocol AdminTokenUseStore {
    /// Records a use at `at`; an earlier time never replaces a later one.
    func recordAdminTokenUse(name: String, createdAt: Int64, at: Int64) throws(StorageError)
    /// Every recorded last use, by name and creation time.
    func adminTokenUses() throws(StorageError) -> [AdminTokenUseRecord]
}

public struct AdminTokenUseRecord: Sendable, Hashable {
    public var name: String
    public var createdAt: Int64
    public var lastUsedAt: Int64

    public init(name: String, createdAt: Int64, lastUsedAt: Int64) {
        self.name = name
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
    }
}
