/// Team transfer: one record per Apple-linked account being moved to another team.
extension SQLTransaction {
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
                TransferSQL.insertTransfer,
                [
                    .text(record.accountID), .text(record.status), .text(record.machine), .text(record.oldSub),
                    SQLValue(record.transferSub), SQLValue(record.newSub), .text(record.targetTeamID),
                    SQLValue(record.failureReason), .integer(Int64(record.attempts)), SQLValue(record.windowEndsAt),
                    .integer(record.updatedAt),
                ]
            )
            // Read as absent, inserted by another request since: the same lost race as a stale version.
            guard changes == 1 else {
                throw StorageError(.versionConflict, "transfer record was created by another request; reload and retry")
            }
            return
        }
        // `old_sub` never changes after the insert. Most transitions change `status` alone: where the
        // dialect sets indexed columns apart, the others' indexes are then left as they were.
        var arguments: [SQLValue] = [
            .text(record.machine), SQLValue(record.newSub), .text(record.targetTeamID), SQLValue(record.failureReason),
            .integer(Int64(record.attempts)), SQLValue(record.windowEndsAt), .integer(record.updatedAt),
            .text(record.accountID), .integer(expectedVersion),
        ]
        let apart = dialect.setsIndexedColumnsApart
        if !apart { arguments += [.text(record.status), SQLValue(record.transferSub)] }
        try versionedUpdate(TransferSQL.update, arguments, what: "transfer record")
        guard apart else { return }
        try setIndexedColumn(
            "UPDATE transfer_records SET status = $1 WHERE account_id = $2 AND status IS NOT $1",
            to: .text(record.status),
            key: record.accountID
        )
        try setIndexedColumn(
            "UPDATE transfer_records SET transfer_sub = $1 WHERE account_id = $2 AND transfer_sub IS NOT $1",
            to: SQLValue(record.transferSub),
            key: record.accountID
        )
    }

    func transferRecord(accountID: String) throws(StorageError) -> TransferRecord? {
        try rows(TransferSQL.selectTransferByAccount, [.text(accountID)]).first.map(Self.transfer)
    }

    func transferRecord(transferSub: String) throws(StorageError) -> TransferRecord? {
        try rows(TransferSQL.selectTransferBySub, [.text(transferSub)]).first.map(Self.transfer)
    }

    func transferRecords(status: String?, limit: Int) throws(StorageError) -> [TransferRecord] {
        if let status {
            return try rows(TransferSQL.selectTransfersByStatus, [.text(status), .integer(Int64(limit))]).map(
                Self.transfer
            )
        }
        return try rows(TransferSQL.selectTransfers, [.integer(Int64(limit))]).map(Self.transfer)
    }

    func transferRecord(oldSub: String) throws(StorageError) -> TransferRecord? {
        try rows(TransferSQL.selectTransferByOldSub, [.text(oldSub)]).first.map(Self.transfer)
    }

    func transferProgress() throws(StorageError) -> TransferProgress {
        // Records of an earlier transfer (docs/apple-protocol.md §3.2, "A later transfer"): prepared
        // for a team that has since moved the app on, unless that team is the latest transfer's
        // target again (A -> B -> A -> B: Apple's transfer identifier is stable per user and team,
        // so a record A -> B left behind is the new A -> B's too). The latest transfer's target is
        // the team the latest retirement's account is now prepared for. Decided by teams alone,
        // not by when a record was last written: a later `complete` run rewrites a left-behind
        // record, and it is still left behind. Its migrated accounts are the later transfer's to
        // prepare (they count as not touched); the accounts it left behind are counted apart, as
        // stranded, unless they are home again (linked in the latest target team, as
        // `complete` skips them: `in-recipient-team`).
        let current =
            try rows(
                """
                SELECT t.target_team_id FROM retired_transfer_records AS r
                    JOIN transfer_records AS t ON t.account_id = r.account_id
                    ORDER BY r.retired_at DESC, r.id DESC LIMIT 1
                """
            ).first?[0].string ?? ""
        let earlier = """
            target_team_id <> $1 AND target_team_id IN (SELECT DISTINCT target_team_id FROM retired_transfer_records)
            """
        var counts: [String: Int] = [:]
        for row in try rows("SELECT status, count(*) FROM transfer_records GROUP BY status") {
            counts[row[0].string ?? ""] = Int(row[1].int ?? 0)
        }
        var pending = 0
        var stranded = 0
        for row in try rows(
            """
            SELECT t.status, CASE WHEN l.team_id = $1 THEN 1 ELSE 0 END, count(*) FROM transfer_records AS t
                LEFT JOIN apple_links AS l ON l.account_id = t.account_id
                WHERE t.status IN ('transferred', 'transferPrepared', 'transferFailed') AND t.target_team_id <> $1
                    AND t.target_team_id IN (SELECT DISTINCT target_team_id FROM retired_transfer_records)
                GROUP BY t.status, CASE WHEN l.team_id = $1 THEN 1 ELSE 0 END
            """,
            [.text(current)]
        ) {
            let status = row[0].string ?? ""
            let home = row[1].int == 1
            let count = Int(row[2].int ?? 0)
            counts[status, default: 0] -= count
            if status == "transferred" {
                pending += count
            } else if !home {
                stranded += count
            }
        }
        // Linked accounts a batch still has to visit: not those it recorded, and not those linked
        // in a team some transfer went to (the recipient's own new users, which `complete`
        // skips as `in-recipient-team`) unless that team has since begun to move the app on, whose
        // `prepare` visits them. The subqueries are uncorrelated: both backends read the (few)
        // teams once, not once per link.
        let untouched = try scalarInt(
            """
            SELECT count(*) FROM apple_links AS l WHERE l.status = 'linked'
                AND NOT EXISTS (SELECT 1 FROM transfer_records AS t WHERE t.account_id = l.account_id)
                AND (l.team_id NOT IN (SELECT DISTINCT target_team_id FROM transfer_records)
                    OR l.team_id IN (SELECT DISTINCT target_team_id FROM retired_transfer_records))
            """
        )
        // An earlier transfer's window is not the current one's.
        var windows: [Int64: Int] = [:]
        for row in try rows(
            """
            SELECT window_ends_at, count(*) FROM transfer_records WHERE window_ends_at IS NOT NULL AND NOT (\(earlier))
                GROUP BY window_ends_at
            """,
            [.text(current)]
        ) {
            if let end = row[0].int { windows[end] = Int(row[1].int ?? 0) }
        }
        // The latest run's window, not the largest: a run given a mistaken later acceptance time
        // and then corrected would otherwise show the mistake for good.
        let latest =
            windows.count > 1
            ? try rows(
                """
                SELECT window_ends_at FROM transfer_records WHERE window_ends_at IS NOT NULL AND NOT (\(earlier))
                    ORDER BY updated_at DESC, window_ends_at DESC LIMIT 1
                """,
                [.text(current)]
            ).first?[0].int : windows.keys.first
        return TransferProgress(
            recordsByStatus: counts,
            untouchedLinkedAccounts: Int(untouched ?? 0) + pending,
            latestWindowEndsAt: latest,
            windows: windows,
            strandedAccounts: stranded
        )
    }

    func retireTransferRecord(accountID: String, expectedVersion: Int64, retiredAt: Int64) throws(StorageError) {
        try rows(
            TransferSQL.retireTransfer,
            [.text(accountID), .integer(expectedVersion), .integer(retiredAt)]
        )
        guard changes == 1 else {
            throw StorageError(.versionConflict, "transfer record was changed by another request; reload and retry")
        }
        try rows(
            "DELETE FROM transfer_records WHERE account_id = $1 AND version = $2",
            [
                .text(accountID), .integer(expectedVersion),
            ]
        )
        guard changes == 1 else {
            throw StorageError(.versionConflict, "transfer record was changed by another request; reload and retry")
        }
    }

    func retiredTransferRecords(accountID: String) throws(StorageError) -> [RetiredTransferRecord] {
        try rows(TransferSQL.selectRetiredByAccount, [.text(accountID)]).map(Self.retired)
    }

    func retiredTransferRecord(oldSub: String) throws(StorageError) -> RetiredTransferRecord? {
        try rows(TransferSQL.selectRetiredByOldSub, [.text(oldSub)]).first.map(Self.retired)
    }

    func transferTargets() throws(StorageError) -> Set<String> {
        Set(
            try rows("SELECT DISTINCT target_team_id FROM transfer_records WHERE target_team_id <> ''").compactMap {
                $0[0].string
            }
        )
    }

    func retiredTransferTargets() throws(StorageError) -> Set<String> {
        Set(try rows("SELECT DISTINCT target_team_id FROM retired_transfer_records").compactMap { $0[0].string })
    }

    func latestWindowEnd(targetTeamID: String) throws(StorageError) -> Int64? {
        try rows(
            """
            SELECT max(window_ends_at) FROM (
                SELECT window_ends_at FROM transfer_records WHERE target_team_id = $1
                UNION ALL SELECT window_ends_at FROM retired_transfer_records WHERE target_team_id = $1
            ) AS windows
            """,
            [.text(targetTeamID)]
        ).first?[0].int
    }

    static func retired(_ row: [SQLValue]) -> RetiredTransferRecord {
        RetiredTransferRecord(record: transfer(Array(row.dropLast())), retiredAt: row.last?.int ?? 0)
    }

    func linkedAccounts(afterAccountID: String?, limit: Int) throws(StorageError) -> [LinkedAccountTransfer] {
        try rows(TransferSQL.selectLinkedAccounts, [.text(afterAccountID ?? ""), .integer(Int64(limit))]).map { row in
            LinkedAccountTransfer(
                row: row,
                linkColumnCount: TransferSQL.linkColumnCount,
                link: Self.link,
                record: Self.transfer
            )
        }
    }
}

private enum TransferSQL {
    /// `status` and `transfer_sub` last, and only where the dialect sets indexed columns together.
    static let update = DialectSQL {
        """
        UPDATE transfer_records SET machine = $1, new_sub = $2, target_team_id = $3, failure_reason = $4,
            attempts = $5, window_ends_at = $6, updated_at = $7, version = version + 1\(
            $0.setsIndexedColumnsApart ? "" : ", status = $10, transfer_sub = $11")
        WHERE account_id = $8 AND version = $9
        """
    }
    static let transferColumns =
        "account_id, status, machine, old_sub, transfer_sub, new_sub, target_team_id, failure_reason, attempts, window_ends_at, updated_at, version"
    /// Both backends check `ON CONFLICT (account_id)` before the other unique indexes, so a record
    /// another request inserted meanwhile is recognised by its `account_id` before `old_sub`, which
    /// it shares, could refuse the row.
    static let insertTransfer =
        "INSERT INTO transfer_records (\(transferColumns)) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 1) ON CONFLICT (account_id) DO NOTHING"
    static let selectTransferByAccount =
        "SELECT \(transferColumns) FROM transfer_records WHERE account_id = $1"
    static let selectTransferBySub =
        "SELECT \(transferColumns) FROM transfer_records WHERE transfer_sub = $1"
    static let selectTransfersByStatus =
        "SELECT \(transferColumns) FROM transfer_records WHERE status = $1 ORDER BY account_id LIMIT $2"
    static let selectTransfers =
        "SELECT \(transferColumns) FROM transfer_records ORDER BY account_id LIMIT $1"
    static let selectTransferByOldSub =
        "SELECT \(transferColumns) FROM transfer_records WHERE old_sub = $1"
    /// Copies the row as it is stored at the expected version; nothing when it is not.
    static let retireTransfer =
        "INSERT INTO retired_transfer_records (\(transferColumns), retired_at) SELECT \(transferColumns), CAST($3 AS BIGINT) FROM transfer_records WHERE account_id = $1 AND version = $2"
    static let selectRetiredByAccount =
        "SELECT \(transferColumns), retired_at FROM retired_transfer_records WHERE account_id = $1 ORDER BY id"
    static let selectRetiredByOldSub =
        "SELECT \(transferColumns), retired_at FROM retired_transfer_records WHERE old_sub = $1 ORDER BY id DESC LIMIT 1"
    static let selectLinkedAccounts = LinkedAccountTransfer.selection(
        linkColumns: AppleLinkSQL.linkColumns,
        transferColumns: transferColumns
    )
    static let linkColumnCount = AppleLinkSQL.linkColumns.split(separator: ", ").count
}
