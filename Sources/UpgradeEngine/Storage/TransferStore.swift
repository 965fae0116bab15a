/// Team transfer inside a transaction: one record per Apple-linked account being moved to another
/// team, and the linked accounts a batch walks through.
public protocol TransferStore {
    /// Inserts the record (`expectedVersion` nil) or updates it. `oldSub`, the Apple id the account
    /// had when its transfer began, is fixed by the insert; an update leaves it as it is. Either
    /// fails with `.versionConflict` when the record changed, or was created, since it was read.
    func upsertTransferRecord(_ record: TransferRecord, expectedVersion: Int64?) throws(StorageError)
    func transferRecord(accountID: String) throws(StorageError) -> TransferRecord?
    func transferRecord(transferSub: String) throws(StorageError) -> TransferRecord?
    /// The record of the account that had the Apple id `oldSub` when its transfer began (the sender
    /// team's id), for the credential state of an id that was transferred away.
    func transferRecord(oldSub: String) throws(StorageError) -> TransferRecord?
    /// Counts for `transfer status`.
    func transferProgress() throws(StorageError) -> TransferProgress
    func transferRecords(status: String?, limit: Int) throws(StorageError) -> [TransferRecord]
    /// Moves the account's record, as stored at `expectedVersion`, to the retired records stamped
    /// `retiredAt`, and deletes it, so that the account's next transfer starts a record of its own
    /// (docs/apple-protocol.md §3.2, "A later transfer"). Called in the transaction that writes that
    /// new record. Fails with `.versionConflict` when the record changed or is gone since it was read.
    func retireTransferRecord(accountID: String, expectedVersion: Int64, retiredAt: Int64) throws(StorageError)
    /// The account's retired records, oldest first.
    func retiredTransferRecords(accountID: String) throws(StorageError) -> [RetiredTransferRecord]
    /// The retired record retired last whose `oldSub` is this id: the credential state of an id
    /// that an earlier transfer moved away from.
    func retiredTransferRecord(oldSub: String) throws(StorageError) -> RetiredTransferRecord?
    /// The target teams of retired records: the teams that received an app and have moved it on.
    func retiredTransferTargets() throws(StorageError) -> Set<String>
    /// The target teams of the live records (those a step recorded one for).
    func transferTargets() throws(StorageError) -> Set<String>
    /// The latest migration-window end recorded for a transfer to `targetTeamID`, in live or
    /// retired records; nil when none has one.
    func latestWindowEnd(targetTeamID: String) throws(StorageError) -> Int64?
    /// The Apple-linked accounts (link status `linked`) after `afterAccountID`, in account-id order,
    /// at most `limit`, each with its transfer record once it has one: a batch's page, in one query.
    func linkedAccounts(afterAccountID: String?, limit: Int) throws(StorageError) -> [LinkedAccountTransfer]
}

/// An Apple-linked account as a transfer batch lists it: its link and, once a step touched it, its
/// transfer record.
public struct LinkedAccountTransfer: Sendable, Equatable {
    public var link: AppleLinkRecord
    public var record: TransferRecord?

    public init(link: AppleLinkRecord, record: TransferRecord?) {
        self.link = link
        self.record = record
    }

    /// The page's query: the link's columns, then the record's (all NULL for an account no step
    /// touched yet). Parameter 1 is the account id to list after, 2 the limit.
    static func selection(linkColumns: String, transferColumns: String) -> String {
        func prefixed(_ table: String, _ columns: String) -> String {
            columns.split(separator: ", ").map { "\(table).\($0)" }.joined(separator: ", ")
        }
        return "SELECT " + prefixed("l", linkColumns) + ", " + prefixed("t", transferColumns)
            + " FROM apple_links AS l LEFT JOIN transfer_records AS t ON t.account_id = l.account_id"
            + " WHERE l.status = 'linked' AND l.account_id > $1 ORDER BY l.account_id LIMIT $2"
    }

    /// One row of `selection`'s answer, read with the aggregates' row readers.
    init(
        row: [SQLValue],
        linkColumnCount: Int,
        link: ([SQLValue]) -> AppleLinkRecord,
        record: ([SQLValue]) -> TransferRecord
    ) {
        let recordColumns = Array(row[linkColumnCount...])
        self.init(
            link: link(Array(row[..<linkColumnCount])),
            record: recordColumns[0] == .null ? nil : record(recordColumns)
        )
    }
}
