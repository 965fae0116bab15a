/// Strong-password changes: one row per change, updated by each transition.
extension SQLiteTransaction: PasswordChangeStore {
    func insertPasswordChange(_ change: PasswordChangeRecord) throws(StorageError) {
        try rows(
            "INSERT INTO password_changes (\(PasswordChangeRecord.columns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            change.insertValues
        )
    }

    func passwordChange(id: String) throws(StorageError) -> PasswordChangeRecord? {
        try rows("SELECT \(PasswordChangeRecord.columns) FROM password_changes WHERE id = ?", [.text(id)]).first.map(
            PasswordChangeRecord.init(row:)
        )
    }

    func updatePasswordChange(_ change: PasswordChangeRecord, expectedVersion: Int64) throws(StorageError) {
        try versionedUpdate(
            """
            UPDATE password_changes SET status = ?, machine = ?, new_password_hash = ?, expires_at = ?, updated_at = ?,
                version = version + 1
            WHERE id = ? AND version = ?
            """,
            change.updateValues + [.integer(expectedVersion)],
            what: "password change"
        )
    }

    func openPasswordChanges(accountID: String, limit: Int) throws(StorageError) -> [PasswordChangeRecord] {
        try rows(
            """
            SELECT \(PasswordChangeRecord.columns) FROM password_changes
            WHERE account_id = ? AND status IN ('started', 'stepUpRequired') ORDER BY created_at, id LIMIT ?
            """,
            [.text(accountID), .integer(Int64(limit))]
        ).map(PasswordChangeRecord.init(row:))
    }

    /// Reads the partial index `password_changes_accountless` (migration 17).
    func deleteAccountlessPasswordChanges(usernameKey: String) throws(StorageError) {
        try rows("DELETE FROM password_changes WHERE account_id IS NULL AND username_key = ?", [.text(usernameKey)])
    }
}
