extension SQLTransaction {
    func accountCredentialCounts() throws(StorageError) -> AccountCredentialCounts {
        var byKind: [String: Int] = [:]
        // Answered from `accounts_credential_kind` (migration 25) without reading the table.
        for row in try rows("SELECT credential_kind, COUNT(*) FROM accounts GROUP BY credential_kind") {
            byKind[row[0].string ?? "", default: 0] += Int(row[1].int ?? 0)
        }
        return AccountCredentialCounts(byKind: byKind, legacyPasswords: try legacyPasswordCount())
    }

    func flowStepCounts(since: Int64, until: Int64) throws(StorageError) -> [FlowStepCount] {
        try rows(ReportSQL.flowSteps, [.integer(since), .integer(until)]).map { row in
            FlowStepCount(
                day: row[0].int ?? 0,
                event: row[1].string ?? "",
                fromStatus: row[2].string,
                toStatus: row[3].string,
                entry: row[4].string,
                reason: row[5].string,
                problem: row[6].string,
                count: Int(row[7].int ?? 0)
            )
        }
    }

    func accountChangeCounts(since: Int64, until: Int64) throws(StorageError) -> [AccountChangeCount] {
        try rows(ReportSQL.accountChanges, [.integer(since), .integer(until)]).map { row in
            AccountChangeCount(
                day: row[0].int ?? 0,
                event: row[1].string ?? "",
                credentialKind: row[2].string,
                count: Int(row[3].int ?? 0)
            )
        }
    }

    func medianCompletionSeconds(_ flow: ReportFlow, since: Int64, until: Int64) throws(StorageError) -> Int64? {
        let (count, middle) =
            switch flow {
            case .upgrade: (ReportSQL.completedUpgrades, ReportSQL.middleUpgrades)
            case .passwordChange: (ReportSQL.completedPasswordChanges, ReportSQL.middlePasswordChanges)
            }
        let completed = try scalarInt(count, [.integer(since), .integer(until)]) ?? 0
        guard completed > 0 else { return nil }
        // The middle one (odd count) or two (even count), after the lower half.
        let values = try rows(middle, [.integer(since), .integer(until), .integer((completed - 1) / 2)])
            .compactMap { $0[0].int }
        guard let first = values.first else { return nil }
        return completed % 2 == 0 && values.count == 2 ? (first + values[1]) / 2 : first
    }
}

/// The report's statements. Days are `at / 86400`: whole UTC days, integer division on both
/// backends. The detail's members are read with each backend's JSON operator; the rows they read
/// are the engine's own JSON objects.
private enum ReportSQL {
    static let flowSteps = DialectSQL {
        """
        SELECT at / 86400, event, from_status, to_status, \($0.detailMember("entry")), \($0.detailMember("reason")),
            \($0.detailMember("problem")), COUNT(*)
        FROM audit_events
        WHERE to_status IS NOT NULL AND at >= $1 AND at < $2
            AND (event LIKE 'upgrade.%' OR event LIKE 'passwordChange.%')
        GROUP BY 1, 2, 3, 4, 5, 6, 7
        """
    }

    static let accountChanges = DialectSQL {
        """
        SELECT at / 86400, event, \($0.detailMember("credentialKind")), COUNT(*)
        FROM audit_events
        WHERE at >= $1 AND at < $2 AND event IN
            ('account.created', 'account.imported', 'account.provisioned', 'account.convertedToApple', 'account.deleted')
        GROUP BY 1, 2, 3
        """
    }

    // Through the partial indexes `upgrade_sessions_completed` and `password_changes_completed`
    // (migration 25): the completed rows of the window, in order of completion time.
    static let completedUpgrades =
        "SELECT COUNT(*) FROM upgrade_sessions WHERE status = 'completed' AND updated_at >= $1 AND updated_at < $2"
    static let middleUpgrades = """
        SELECT updated_at - created_at FROM upgrade_sessions
        WHERE status = 'completed' AND updated_at >= $1 AND updated_at < $2
        ORDER BY 1 LIMIT 2 OFFSET $3
        """
    static let completedPasswordChanges =
        "SELECT COUNT(*) FROM password_changes WHERE status = 'completed' AND updated_at >= $1 AND updated_at < $2"
    static let middlePasswordChanges = """
        SELECT updated_at - created_at FROM password_changes
        WHERE status = 'completed' AND updated_at >= $1 AND updated_at < $2
        ORDER BY 1 LIMIT 2 OFFSET $3
        """
}

extension SQLDialect {
    /// The text of the audit detail's member `key` (NULL when absent).
    fileprivate func detailMember(_ key: String) -> String {
        switch self {
        case .sqlite: "json_extract(detail, '$.\(key)')"
        case .postgres: "((detail::jsonb) ->> '\(key)')"
        }
    }
}
