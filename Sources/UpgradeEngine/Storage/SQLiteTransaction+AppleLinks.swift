/// Apple links: the Apple `sub` each converted account signs in with.
extension SQLiteTransaction: AppleLinkStore {
    static let linkColumns =
        "account_id, sub, team_id, client_id, email, is_private_email, refresh_token_ciphertext, status, linked_at, updated_at, version, email_forwarding_enabled, email_forwarding_at"
    private static let insertLink =
        "INSERT INTO apple_links (\(Self.linkColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    private static let selectLinkByAccount = "SELECT \(Self.linkColumns) FROM apple_links WHERE account_id = ?"
    private static let selectLinkBySub = "SELECT \(Self.linkColumns) FROM apple_links WHERE sub = ?"

    static func link(_ row: [SQLValue]) -> AppleLinkRecord {
        AppleLinkRecord(
            accountID: row[0].string ?? "",
            sub: row[1].string ?? "",
            teamID: row[2].string ?? "",
            clientID: row[3].string ?? "",
            email: row[4].string,
            isPrivateEmail: row[5].int.map { $0 != 0 },
            refreshTokenCiphertext: row[6].bytes,
            status: AppleLinkStatus(rawValue: row[7].string ?? "") ?? .revoked,
            emailForwardingEnabled: row[11].int.map { $0 != 0 },
            emailForwardingAt: row[12].int,
            linkedAt: row[8].int ?? 0,
            updatedAt: row[9].int ?? 0,
            version: row[10].int ?? 0
        )
    }

    func insertAppleLink(_ link: AppleLinkRecord) throws(StorageError) {
        try rows(
            Self.insertLink,
            [
                .text(link.accountID), .text(link.sub), .text(link.teamID), .text(link.clientID), SQLValue(link.email),
                SQLValue(link.isPrivateEmail), SQLValue(link.refreshTokenCiphertext), .text(link.status.rawValue),
                .integer(link.linkedAt), .integer(link.updatedAt), .integer(link.version),
                SQLValue(link.emailForwardingEnabled), SQLValue(link.emailForwardingAt),
            ]
        )
    }

    func appleLink(accountID: String) throws(StorageError) -> AppleLinkRecord? {
        try rows(Self.selectLinkByAccount, [.text(accountID)]).first.map(
            Self.link
        )
    }

    func appleLink(sub: String) throws(StorageError) -> AppleLinkRecord? {
        try rows(Self.selectLinkBySub, [.text(sub)]).first.map(Self.link)
    }

    /// `sub` is indexed and set apart (`setIndexedColumn`): only a team transfer changes it, so a
    /// notification or a stored refresh token writes no page of the `sub` index.
    func updateAppleLink(_ link: AppleLinkRecord, expectedVersion: Int64) throws(StorageError) {
        try versionedUpdate(
            """
            UPDATE apple_links SET team_id = ?, client_id = ?, email = ?, is_private_email = ?, refresh_token_ciphertext = ?,
                status = ?, email_forwarding_enabled = ?, email_forwarding_at = ?, updated_at = ?, version = version + 1
            WHERE account_id = ? AND version = ?
            """,
            [
                .text(link.teamID), .text(link.clientID), SQLValue(link.email), SQLValue(link.isPrivateEmail),
                SQLValue(link.refreshTokenCiphertext), .text(link.status.rawValue),
                SQLValue(link.emailForwardingEnabled), SQLValue(link.emailForwardingAt), .integer(link.updatedAt),
                .text(link.accountID), .integer(expectedVersion),
            ],
            what: "Apple link"
        )
        try setIndexedColumn(
            "UPDATE apple_links SET sub = ?1 WHERE account_id = ?2 AND sub IS NOT ?1",
            to: .text(link.sub),
            key: link.accountID
        )
    }
}
