/// Team transfer: one record per Apple-linked account being moved to another team.
extension SQLiteTransaction: TransferStore {
    static let transferColumns =
        "account_id, status, machine, old_sub, transfer_sub, new_sub, target_team_id, failure_reason, attempts, window_ends_at, updated_at, version"
    /// SQLite checks an upsert's target first, so a record another request inserted meanwhile is
    /// recognised by its `account_id` before `old_sub`, which it shares, could refuse the row.
    private static let insertTransfer =
        "INSERT INTO transfer_records (\(Self.transferColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1) ON CONFLICT (account_id) DO NOTHING"
    private static let selectTransferByAccount =
        "SELECT \(Self.transferColumns) FROM transfer_records WHERE account_id = ?"
    private static let selectTransferBySub =
        "SELECT \(Self.transferColumns) FROM transfer_records WHERE transfer_sub = ?"
    private static let selectTransfersByStatus =
        "SELECT \(Self.transferColumns) FROM transfer_records WHERE status = ? ORDER BY account_id LIMIT ?"
    private static let selectTransfers =
        "SELECT \(Self.transferColumns) FROM transfer_records ORDER BY account_id LIMIT ?"
    private static let selectTransferByOldSub = "SELECT \(Self.transferColumns) FROM transfer_records WHERE old_sub = ?"

    static func transfer(_ row: [SQLValue]) -> TransferRecord {
        TransferRecord(
            accountID: row[0].string ?? "",
            status: row[1].string ?? "",
            machine: row[2].string ?? "",
            oldSub: row[3].string ?? "",
            transferSub: row[4].string,
            newSub: row[5].string,
            targetTeamID: row[6].string ?? "",
            failureReason: row[7].string,
            attempts: Int(row[8].int ?? 0),
            windowEndsAt: row[9].int,
            updatedAt: row[10].int ?? 0,
            version: row[11].int ?? 0
        )
    }

    func upsertTransferRecord(_ record: TransferRecord, expectedVersion: Int64?) throws(StorageError) {
        guard let expectedVersion else {
            try rows(
                Self.insertTransfer,
                [
                    .text(record.accountID), .text(record.status), .text(record.machine), .text(record.oldSub),
                    SQLValue(record.transferSub), SQLValue(record.newSub), .text(record.targetTeamID),
                    SQLValue(record.failureReason), .integer(Int64(record.attempts)), SQLValue(record.windowEndsAt),
                    .integer(record.updatedAt),
                ]
            )
            // Read as absent, inserted by another request since: the same lost race as a stale version.
            guard connection.changes == 1 else {
                throw StorageError(.versionConflict, "transfer record was created by another request; reload and retry")
            }
            return
        }
        // The indexed columns are set apart (`setIndexedColumn`): most transitions change `status`
        // alone, and `old_sub` never changes after the insert.
        try versionedUpdate(
            """
            UPDATE transfer_records SET machine = ?, new_sub = ?, target_team_id = ?, failure_reason = ?, attempts = ?,
                window_ends_at = ?, updated_at = ?, version = version + 1
            WHERE account_id = ? AND version = ?
            """,
            [
                .text(record.machine), SQLValue(record.newSub), .text(record.targetTeamID),
                SQLValue(record.failureReason), .integer(Int64(record.attempts)), SQLValue(record.windowEndsAt),
                .integer(record.updatedAt), .text(record.accountID), .integer(expectedVersion),
            ],
            what: "transfer record"
        )
        try setIndexedColumn(
            "UPDATE transfer_records SET status = ?1 WHERE account_id = ?2 AND status IS NOT ?1",
            to: .text(record.status),
            key: record.accountID
        )
        try setIndexedColumn(
            "UPDATE transfer_records SET transfer_sub = ?1 WHERE account_id = ?2 AND transfer_sub IS NOT ?1",
            to: SQLValue(record.transferSub),
            key: record.accountID
        )
    }

    func transferRecord(accountID: String) throws(StorageError) -> TransferRecord? {
        try rows(Self.selectTransferByAccount, [.text(accountID)]).first
            .map(Self.transfer)
    }

    func transferRecord(transferSub: String) throws(StorageError) -> TransferRecord? {
        try rows(Self.selectTransferBySub, [.text(transferSub)])
            .first.map(Self.transfer)
    }

    func transferRecords(status: String?, limit: Int) throws(StorageError) -> [TransferRecord] {
        if let status {
            return try rows(
                Self.selectTransfersByStatus,
                [.text(status), .integer(Int64(limit))]
            ).map(Self.transfer)
        }
        return try rows(
            Self.selectTransfers,
            [.integer(Int64(limit))]
        )
        .map(Self.transfer)
    }

    func transferRecord(oldSub: String) throws(StorageError) -> TransferRecord? {
        try rows(Self.selectTransferByOldSub, [.text(oldSub)]).first
            .map(Self.transfer)
    }

    func transferProgress() throws(StorageError) -> TransferProgress {
        var counts: [String: Int] = [:]
        for row in try rows("SELECT status, count(*) FROM transfer_records GROUP BY status") {
            counts[row[0].string ?? ""] = Int(row[1].int ?? 0)
        }
        let untouched = try connection.scalarInt(
            """
            SELECT count(*) FROM apple_links AS l WHERE l.status = 'linked'
                AND NOT EXISTS (SELECT 1 FROM transfer_records AS t WHERE t.account_id = l.account_id)
            """
        )
        let windowEndsAt = try rows("SELECT max(window_ends_at) FROM transfer_records").first?[0].int
        return TransferProgress(
            recordsByStatus: counts,
            untouchedLinkedAccounts: Int(untouched ?? 0),
            latestWindowEndsAt: windowEndsAt
        )
    }

    private static let selectLinkedAccounts = LinkedAccountTransfer.selection(
        linkColumns: linkColumns,
        transferColumns: transferColumns
    ) { _ in "?" }
    private static let linkColumnCount = linkColumns.split(separator: ", ").count

    func linkedAccounts(afterAccountID: String?, limit: Int) throws(StorageError) -> [LinkedAccountTransfer] {
        try rows(Self.selectLinkedAccounts, [.text(afterAccountID ?? ""), .integer(Int64(limit))]).map { row in
            LinkedAccountTransfer(
                row: row,
                linkColumnCount: Self.linkColumnCount,
                link: Self.link,
                record: Self.transfer
            )
        }
    }
}
