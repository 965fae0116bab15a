/// Apple links: the Apple `sub` each converted account signs in with.
extension SQLTransaction {
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
            AppleLinkSQL.insertLink,
            [
                .text(link.accountID), .text(link.sub), .text(link.teamID), .text(link.clientID), SQLValue(link.email),
                SQLValue(link.isPrivateEmail), SQLValue(link.refreshTokenCiphertext), .text(link.status.rawValue),
                .integer(link.linkedAt), .integer(link.updatedAt), .integer(link.version),
                SQLValue(link.emailForwardingEnabled), SQLValue(link.emailForwardingAt),
            ]
        )
    }

    func appleLink(accountID: String) throws(StorageError) -> AppleLinkRecord? {
        try rows(AppleLinkSQL.selectLinkByAccount, [.text(accountID)]).first.map(Self.link)
    }

    func appleLink(sub: String) throws(StorageError) -> AppleLinkRecord? {
        try rows(AppleLinkSQL.selectLinkBySub, [.text(sub)]).first.map(Self.link)
    }

    /// `sub` is indexed, and only a team transfer changes it. Where the dialect sets indexed columns
    /// apart, it gets a statement of its own, so a notification or a stored refresh token writes no
    /// page of its index.
    func updateAppleLink(_ link: AppleLinkRecord, expectedVersion: Int64) throws(StorageError) {
        var arguments: [SQLValue] = [
            .text(link.teamID), .text(link.clientID), SQLValue(link.email), SQLValue(link.isPrivateEmail),
            SQLValue(link.refreshTokenCiphertext), .text(link.status.rawValue), SQLValue(link.emailForwardingEnabled),
            SQLValue(link.emailForwardingAt), .integer(link.updatedAt), .text(link.accountID),
            .integer(expectedVersion),
        ]
        let apart = dialect.setsIndexedColumnsApart
        if !apart { arguments.append(.text(link.sub)) }
        try versionedUpdate(AppleLinkSQL.update, arguments, what: "Apple link")
        guard apart else { return }
        try setIndexedColumn(
            "UPDATE apple_links SET sub = $1 WHERE account_id = $2 AND sub IS NOT $1",
            to: .text(link.sub),
            key: link.accountID
        )
    }
}

enum AppleLinkSQL {
    static let linkColumns =
        "account_id, sub, team_id, client_id, email, is_private_email, refresh_token_ciphertext, status, linked_at, updated_at, version, email_forwarding_enabled, email_forwarding_at"
    static let insertLink =
        "INSERT INTO apple_links (\(linkColumns)) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)"
    static let selectLinkByAccount = "SELECT \(linkColumns) FROM apple_links WHERE account_id = $1"
    static let selectLinkBySub = "SELECT \(linkColumns) FROM apple_links WHERE sub = $1"
    /// `sub` last, and only where the dialect sets indexed columns together.
    static let update = DialectSQL {
        """
        UPDATE apple_links SET team_id = $1, client_id = $2, email = $3, is_private_email = $4,
            refresh_token_ciphertext = $5, status = $6, email_forwarding_enabled = $7, email_forwarding_at = $8,
            updated_at = $9, version = version + 1\($0.setsIndexedColumnsApart ? "" : ", sub = $12")
        WHERE account_id = $10 AND version = $11
        """
    }
}
