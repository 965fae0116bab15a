/// Strong-password changes: one row per change, updated by each transition.
extension SQLTransaction {
    func insertPasswordChange(_ change: PasswordChangeRecord) throws(StorageError) {
        try send(
            "INSERT INTO password_changes (\(PasswordChangeRecord.columns)) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
            change.insertValues
        )
    }

    func passwordChange(id: String) throws(StorageError) -> PasswordChangeRecord? {
        try rows("SELECT \(PasswordChangeRecord.columns) FROM password_changes WHERE id = $1", [.text(id)]).first.map(
            PasswordChangeRecord.init(row:)
        )
    }

    func updatePasswordChange(_ change: PasswordChangeRecord, expectedVersion: Int64) throws(StorageError) {
        try versionedUpdate(
            """
            UPDATE password_changes SET status = $1, machine = $2, new_password_hash = $3, expires_at = $4,
                updated_at = $5, version = version + 1
            WHERE id = $6 AND version = $7
            """,
            change.updateValues + [.integer(expectedVersion)],
            what: "password change"
        )
    }

    func openPasswordChanges(accountID: String, limit: Int) throws(StorageError) -> [PasswordChangeRecord] {
        try rows(
            PasswordChangeSQL.selectOpenChanges,
            [.text(accountID), .integer(Int64(limit))]
        ).map(PasswordChangeRecord.init(row:))
    }

    /// Reads the partial index `password_changes_accountless` (migration 17).
    func deleteAccountlessPasswordChanges(usernameKey: String) throws(StorageError) {
        try send("DELETE FROM password_changes WHERE account_id IS NULL AND username_key = $1", [.text(usernameKey)])
    }
}

enum PasswordChangeSQL {
    /// Reads the partial index `password_changes_account_open` (migration 24) in its order: only the
    /// account's open changes, however many ended ones it has. The status list is the index's.
    static let selectOpenChanges = """
        SELECT \(PasswordChangeRecord.columns) FROM password_changes
        WHERE account_id = $1 AND status IN ('started', 'stepUpRequired') ORDER BY created_at, id LIMIT $2
        """
}
