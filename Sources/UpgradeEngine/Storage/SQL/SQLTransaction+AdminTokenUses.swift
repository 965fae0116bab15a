/// When each admin token was last used (`AdminTokenUseStore`).
extension SQLTransaction {
    func recordAdminTokenUse(name: String, createdAt: Int64, at: Int64) throws(StorageError) {
        try rows(
            """
            INSERT INTO admin_token_uses (name, created_at, last_used_at) VALUES ($1, $2, $3)
            ON CONFLICT (name, created_at) DO UPDATE SET last_used_at = CASE
                WHEN excluded.last_used_at > admin_token_uses.last_used_at THEN excluded.last_used_at
                ELSE admin_token_uses.last_used_at END
            """,
            [.text(name), .integer(createdAt), .integer(at)]
        )
    }

    func adminTokenUses() throws(StorageError) -> [AdminTokenUseRecord] {
        try rows("SELECT name, created_at, last_used_at FROM admin_token_uses ORDER BY name, created_at").map {
            AdminTokenUseRecord(name: $0[0].string ?? "", createdAt: $0[1].int ?? 0, lastUsedAt: $0[2].int ?? 0)
        }
    }
}
