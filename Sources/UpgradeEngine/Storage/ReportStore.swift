/// The migration report's reads inside a transaction (`ReportService`): counts grouped in the
/// database, each answered from an index (migration 25, docs/architecture.md §12), never rows.
public protocol ReportStore {
    /// Accounts per stored `credential_kind`, and the password rows still of format `legacy`.
    func accountCredentialCounts() throws(StorageError) -> AccountCredentialCounts
    /// The audit trail's upgrade and password-change transitions with `since <= at < until`,
    /// counted per UTC day, event, statuses and the detail's `entry`, `reason` and `problem`.
    func flowStepCounts(since: Int64, until: Int64) throws(StorageError) -> [FlowStepCount]
    /// The audit trail's account creations, conversions and deletions with `since <= at < until`, counted
    /// per UTC day, event and the detail's `credentialKind`.
    func accountChangeCounts(since: Int64, until: Int64) throws(StorageError) -> [AccountChangeCount]
    /// The median seconds from creation to completion of the flows of `flow` completed (last
    /// updated) in `since <= t < until`; nil when none was. Of two middle values, their mean.
    func medianCompletionSeconds(_ flow: ReportFlow, since: Int64, until: Int64) throws(StorageError) -> Int64?
}

/// Which flow a report read is about.
public enum ReportFlow: String, Sendable, CaseIterable {
    case upgrade
    case passwordChange
}

/// `accounts` per `credential_kind`, and how many password rows wait for the legacy login system.
public struct AccountCredentialCounts: Sendable, Equatable {
    public var byKind: [String: Int]
    public var legacyPasswords: Int

    public init(byKind: [String: Int], legacyPasswords: Int) {
        self.byKind = byKind
        self.legacyPasswords = legacyPasswords
    }
}

/// One group of flow transitions: `day` is whole days since 1970-01-01 (UTC).
public struct FlowStepCount: Sendable, Equatable {
    public var day: Int64
    public var event: String
    public var fromStatus: String?
    public var toStatus: String?
    public var entry: String?
    public var reason: String?
    public var problem: String?
    public var count: Int

    public init(
        day: Int64,
        event: String,
        fromStatus: String?,
        toStatus: String?,
        entry: String?,
        reason: String?,
        problem: String?,
        count: Int
    ) {
        self.day = day
        self.event = event
        self.fromStatus = fromStatus
        self.toStatus = toStatus
        self.entry = entry
        self.reason = reason
        self.problem = problem
        self.count = count
    }
}

/// One group of account changes: `day` is whole days since 1970-01-01 (UTC).
public struct AccountChangeCount: Sendable, Equatable {
    public var day: Int64
    public var event: String
    public var credentialKind: String?
    public var count: Int

    public init(day: Int64, event: String, credentialKind: String?, count: Int) {
        self.day = day
        self.event = event
        self.credentialKind = credentialKind
        self.count = count
    }
}
