/// Upgrade sessions: one row per upgrade attempt, updated by each transition.
extension SQLiteTransaction: UpgradeSessionStore {
    private static let sessionColumns =
        "id, account_id, username_key, service_identifier, status, machine, state_hash, nonce_hash, linked_sub, created_at, expires_at, updated_at, version"
    private static let insertSession =
        "INSERT INTO upgrade_sessions (\(Self.sessionColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    private static let selectSessionByID = "SELECT \(Self.sessionColumns) FROM upgrade_sessions WHERE id = ?"

    func insertUpgradeSession(_ session: UpgradeSessionRecord) throws(StorageError) {
        try rows(
            Self.insertSession,
            [
                .text(session.id), SQLValue(session.accountID), .text(session.usernameKey),
                .text(session.serviceIdentifier),
                .text(session.status), .text(session.machine), SQLValue(session.stateHash), SQLValue(session.nonceHash),
                SQLValue(session.linkedSub), .integer(session.createdAt), .integer(session.expiresAt),
                .integer(session.updatedAt),
                .integer(session.version),
            ]
        )
    }

    func upgradeSession(id: String) throws(StorageError) -> UpgradeSessionRecord? {
        try rows(Self.selectSessionByID, [.text(id)]).first.map(Self.session)
    }

    private static let selectOpenSessions = """
        SELECT \(sessionColumns) FROM upgrade_sessions
        WHERE account_id = ? AND status IN ('started', 'stepUpRequired', 'awaitingAppleCredential', 'converting')
        ORDER BY created_at, id LIMIT ?
        """
    /// Matches the partial index `upgrade_sessions_converting`.
    private static let selectConversionsExpiring = """
        SELECT \(sessionColumns) FROM upgrade_sessions
        WHERE status = 'converting' AND expires_at <= ? ORDER BY expires_at LIMIT ?
        """

    func openUpgradeSessions(accountID: String, limit: Int) throws(StorageError) -> [UpgradeSessionRecord] {
        try rows(Self.selectOpenSessions, [.text(accountID), .integer(Int64(limit))]).map(Self.session)
    }

    func conversions(expiringBy time: Int64, limit: Int) throws(StorageError) -> [UpgradeSessionRecord] {
        try rows(Self.selectConversionsExpiring, [.integer(time), .integer(Int64(limit))]).map(Self.session)
    }

    /// Reads the partial index `upgrade_sessions_accountless` (migration 17).
    func deleteAccountlessUpgradeSessions(usernameKey: String) throws(StorageError) {
        try rows("DELETE FROM upgrade_sessions WHERE account_id IS NULL AND username_key = ?", [.text(usernameKey)])
    }

    private static func session(_ row: [SQLValue]) -> UpgradeSessionRecord {
        UpgradeSessionRecord(
            id: row[0].string ?? "",
            accountID: row[1].string,
            usernameKey: row[2].string ?? "",
            serviceIdentifier: row[3].string ?? "",
            status: row[4].string ?? "",
            machine: row[5].string ?? "",
            stateHash: row[6].string,
            nonceHash: row[7].string,
            linkedSub: row[8].string,
            createdAt: row[9].int ?? 0,
            expiresAt: row[10].int ?? 0,
            updatedAt: row[11].int ?? 0,
            version: row[12].int ?? 0
        )
    }

    /// Sets only the columns a transition changes. `account_id`, the one indexed column, never
    /// changes, and naming it here even unchanged rewrote its `upgrade_sessions_account` entry (see
    /// `setIndexedColumn`): one more page per transition.
    func updateUpgradeSession(_ session: UpgradeSessionRecord, expectedVersion: Int64) throws(StorageError) {
        try versionedUpdate(
            """
            UPDATE upgrade_sessions SET status = ?, machine = ?, state_hash = ?, nonce_hash = ?, linked_sub = ?,
                expires_at = ?, updated_at = ?, version = version + 1
            WHERE id = ? AND version = ?
            """,
            [
                .text(session.status), .text(session.machine), SQLValue(session.stateHash),
                SQLValue(session.nonceHash), SQLValue(session.linkedSub), .integer(session.expiresAt),
                .integer(session.updatedAt),
                .text(session.id), .integer(expectedVersion),
            ],
            what: "upgrade"
        )
    }
}
