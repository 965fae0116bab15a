/// Where a team transfer stands across all accounts, as `transfer status` shows it.
public struct TransferProgress: Sendable, Equatable {
    /// Transfer records per stored `status` (raw ``TransferStatus`` values).
    public var recordsByStatus: [String: Int]
    /// Accounts linked to Apple that no transfer step has touched yet (no record).
    public var untouchedLinkedAccounts: Int
    /// The latest migration-window end any record was given, if one was.
    public var latestWindowEndsAt: Int64?

    public init(recordsByStatus: [String: Int], untouchedLinkedAccounts: Int, latestWindowEndsAt: Int64?) {
        self.recordsByStatus = recordsByStatus
        self.untouchedLinkedAccounts = untouchedLinkedAccounts
        self.latestWindowEndsAt = latestWindowEndsAt
    }
}
