/// Where a team transfer stands across all accounts, as `transfer status` shows it.
public struct TransferProgress: Sendable, Equatable {
    /// Transfer records per stored `status` (raw ``TransferStatus`` values).
    public var recordsByStatus: [String: Int]
    /// Accounts linked to Apple that no transfer step has touched yet (no record), and those an
    /// earlier transfer migrated that the later one has yet to prepare (docs/apple-protocol.md
    /// §3.2, "A later transfer"), whose records are not in ``recordsByStatus``.
    public var untouchedLinkedAccounts: Int
    /// Accounts an earlier transfer left behind with the id of the team before it: no later
    /// transfer can move them. Their records are not in ``recordsByStatus``.
    public var strandedAccounts: Int
    /// The migration-window end of the record written last that has one: the latest run's, even
    /// when an earlier run was given a later (mistaken) acceptance time.
    public var latestWindowEndsAt: Int64?
    /// Records per window end, when runs were given different acceptance times.
    public var windows: [Int64: Int]

    public init(
        recordsByStatus: [String: Int],
        untouchedLinkedAccounts: Int,
        latestWindowEndsAt: Int64?,
        windows: [Int64: Int] = [:],
        strandedAccounts: Int = 0
    ) {
        self.strandedAccounts = strandedAccounts
        self.recordsByStatus = recordsByStatus
        self.untouchedLinkedAccounts = untouchedLinkedAccounts
        self.latestWindowEndsAt = latestWindowEndsAt
        self.windows = windows
    }
}
