/// Upgrade sessions: one row per upgrade attempt, updated by each transition.
extension SQLTransaction {
    func insertUpgradeSession(_ session: UpgradeSessionRecord) throws(StorageError) {
        try send(
            UpgradeSessionSQL.insertSession,
            [
                .text(session.id), SQLValue(session.accountID), .text(session.usernameKey),
                .text(session.serviceIdentifier),
                .text(session.status), .text(session.machine), SQLValue(session.stateHash), SQLValue(session.nonceHash),
                SQLValue(session.linkedSub), .integer(session.createdAt), .integer(session.expiresAt),
                .integer(session.updatedAt),
                .integer(session.version), SQLValue(session.entry),
            ]
        )
    }

    func upgradeSession(id: String) throws(StorageError) -> UpgradeSessionRecord? {
        try rows(UpgradeSessionSQL.selectSessionByID, [.text(id)]).first.map(Self.session)
    }

    func openUpgradeSessions(accountID: String, limit: Int) throws(StorageError) -> [UpgradeSessionRecord] {
        try rows(UpgradeSessionSQL.selectOpenSessions, [.text(accountID), .integer(Int64(limit))]).map(Self.session)
    }

    func conversions(expiringBy time: Int64, limit: Int) throws(StorageError) -> [UpgradeSessionRecord] {
        try rows(UpgradeSessionSQL.selectConversionsExpiring, [.integer(time), .integer(Int64(limit))]).map(
            Self.session
        )
    }

    /// Reads the partial index `upgrade_sessions_accountless` (migration 17).
    func deleteAccountlessUpgradeSessions(usernameKey: String) throws(StorageError) {
        try send("DELETE FROM upgrade_sessions WHERE account_id IS NULL AND username_key = $1", [.text(usernameKey)])
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
            version: row[12].int ?? 0,
            entry: row[13].string
        )
    }

    /// Sets only the columns a transition changes; `account_id`, `username_key`,
    /// `service_identifier` and `created_at` are fixed by the insert. On SQLite, naming `account_id`
    /// even unchanged would rewrite its `upgrade_sessions_account` entry; `status` decides whether the
    /// row is in the partial indexes of open and converting sessions, so a flow that ends leaves them.
    func updateUpgradeSession(_ session: UpgradeSessionRecord, expectedVersion: Int64) throws(StorageError) {
        try versionedUpdate(
            """
            UPDATE upgrade_sessions SET status = $1, machine = $2, state_hash = $3, nonce_hash = $4, linked_sub = $5,
                expires_at = $6, updated_at = $7, version = version + 1
            WHERE id = $8 AND version = $9
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

enum UpgradeSessionSQL {
    static let sessionColumns =
        "id, account_id, username_key, service_identifier, status, machine, state_hash, nonce_hash, linked_sub, created_at, expires_at, updated_at, version, entry"
    static let insertSession =
        "INSERT INTO upgrade_sessions (\(sessionColumns)) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)"
    static let selectSessionByID = "SELECT \(sessionColumns) FROM upgrade_sessions WHERE id = $1"
    /// Reads the partial index `upgrade_sessions_account_open` (migration 24) in its order: only the
    /// account's open sessions, however many ended ones it has. The status list is the index's.
    static let selectOpenSessions = """
        SELECT \(sessionColumns) FROM upgrade_sessions
        WHERE account_id = $1 AND status IN ('started', 'stepUpRequired', 'awaitingAppleCredential', 'converting')
        ORDER BY created_at, id LIMIT $2
        """
    /// Matches the partial index `upgrade_sessions_converting`.
    static let selectConversionsExpiring = """
        SELECT \(sessionColumns) FROM upgrade_sessions
        WHERE status = 'converting' AND expires_at <= $1 ORDER BY expires_at LIMIT $2
        """
}
