/// `transfer status`: how many accounts are in each transfer state, and the migration window.
public struct TransferStatusReport: Sendable, Equatable {
    /// Transfer records per status (every status present, zero when none). Accounts never touched
    /// by a transfer step are counted in ``untouchedLinkedAccounts``; ``accounts(in:)`` adds them to
    /// `linked`.
    public var counts: [TransferStatus: Int]
    /// Apple-linked accounts that no transfer step has touched yet, and those an earlier transfer
    /// migrated that the later one has yet to prepare (docs/apple-protocol.md §3.2, "A later transfer").
    public var untouchedLinkedAccounts: Int
    /// Accounts an earlier transfer left behind with the id of the team before it, which no later
    /// transfer can move (batches skip them as `stranded`). Not in ``counts``.
    public var strandedAccounts: Int
    /// When the 60-day window closes, as recorded by the latest `complete` run (or `prepare` run
    /// given the acceptance time); nil when never recorded.
    public var windowEndsAt: Int64?
    /// Seconds until the window closes at the time asked, 0 once closed; nil when unknown.
    public var windowSecondsLeft: Int64?
    /// Records per window end, every one recorded (``windowEndsAt`` among them).
    public var windows: [Int64: Int]

    /// Records per window end other than ``windowEndsAt``: runs given another acceptance time.
    public var otherWindows: [Int64: Int] { windows.filter { $0.key != windowEndsAt } }

    /// Accounts in `status`, as the transfer machine has them: an account no transfer step has
    /// touched has no record yet, but is `linked` all the same.
    public func accounts(in status: TransferStatus) -> Int {
        counts[status, default: 0] + (status == .linked ? untouchedLinkedAccounts : 0)
    }

    /// Accounts a batch visits: linked to Apple and not revoked or deleted.
    public var linkedAccounts: Int {
        untouchedLinkedAccounts + counts.filter { !$0.key.isTerminal }.map(\.value).reduce(0, +)
    }

    public init(
        counts: [TransferStatus: Int],
        untouchedLinkedAccounts: Int,
        windowEndsAt: Int64?,
        windowSecondsLeft: Int64?,
        windows: [Int64: Int] = [:],
        strandedAccounts: Int = 0
    ) {
        self.strandedAccounts = strandedAccounts
        self.counts = counts
        self.untouchedLinkedAccounts = untouchedLinkedAccounts
        self.windowEndsAt = windowEndsAt
        self.windowSecondsLeft = windowSecondsLeft
        self.windows = windows
    }
}
