/// Apple links: the Apple `sub` each converted account signs in with.
extension PostgresTransaction: AppleLinkStore {
    static let linkColumns =
        "account_id, sub, team_id, client_id, email, is_private_email, refresh_token_ciphertext, status, linked_at, updated_at, version, email_forwarding_enabled, email_forwarding_at"
    private static let insertLink =
        "INSERT INTO apple_links (\(Self.linkColumns)) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)"
    private static let selectLinkByAccount = "SELECT \(Self.linkColumns) FROM apple_links WHERE account_id = $1"
    private static let selectLinkBySub = "SELECT \(Self.linkColumns) FROM apple_links WHERE sub = $1"

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

    /// The flags are BOOLEAN columns: `SQLValue(Bool?)` binds 1 or 0, which PostgreSQL reads as a boolean.
    func insertAppleLink(_ link: AppleLinkRecord) throws(StorageError) {
        try send(
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
        try rows(Self.selectLinkByAccount, [.text(accountID)]).first.map(Self.link)
    }

    func appleLink(sub: String) throws(StorageError) -> AppleLinkRecord? {
        try rows(Self.selectLinkBySub, [.text(sub)]).first.map(Self.link)
    }

    /// One statement, `sub` included: PostgreSQL adds index entries only for a row whose indexed
    /// values changed (a heap-only update otherwise), so there is nothing to gain by setting it apart.
    func updateAppleLink(_ link: AppleLinkRecord, expectedVersion: Int64) throws(StorageError) {
        try versionedUpdate(
            """
            UPDATE apple_links SET sub = $1, team_id = $2, client_id = $3, email = $4, is_private_email = $5,
                refresh_token_ciphertext = $6, status = $7, email_forwarding_enabled = $8, email_forwarding_at = $9,
                updated_at = $10, version = version + 1
            WHERE account_id = $11 AND version = $12
            """,
            [
                .text(link.sub), .text(link.teamID), .text(link.clientID), SQLValue(link.email),
                SQLValue(link.isPrivateEmail), SQLValue(link.refreshTokenCiphertext), .text(link.status.rawValue),
                SQLValue(link.emailForwardingEnabled), SQLValue(link.emailForwardingAt), .integer(link.updatedAt),
                .text(link.accountID), .integer(expectedVersion),
            ],
            what: "Apple link"
        )
    }
}
