/// One-time tickets for in-app upgrades. Spending is a single conditional UPDATE, so a ticket is
/// spent once: SQLite serialises writers (BEGIN IMMEDIATE); on PostgreSQL, of two SERIALIZABLE
/// transactions spending one ticket, the second waits for the first, is rolled back and run again,
/// and finds the ticket used.
extension SQLTransaction {
    func insertUpgradeTicket(_ ticket: UpgradeTicketRecord, now: Int64) throws(StorageError) {
        try send("DELETE FROM upgrade_tickets WHERE expires_at <= $1", [.integer(now)])
        try send(
            "INSERT INTO upgrade_tickets (\(UpgradeTicketRecord.columns)) VALUES ($1, $2, $3, $4, $5, $6, $7)",
            [
                .text(ticket.ticketHash), .text(ticket.accountID), .integer(ticket.secondFactorVerified ? 1 : 0),
                .integer(ticket.createdAt), .integer(ticket.expiresAt), ticket.usedAt.map { .integer($0) } ?? .null,
                SQLValue(ticket.usedBy),
            ]
        )
    }

    func consumeUpgradeTicket(
        hash: String,
        accountID: String,
        usedBy: String,
        now: Int64
    ) throws(StorageError) -> UpgradeTicketRecord? {
        try rows(
            "UPDATE upgrade_tickets SET used_at = $1, used_by = $2 WHERE ticket_hash = $3 AND account_id = $4 AND used_at IS NULL AND expires_at > $1 RETURNING \(UpgradeTicketRecord.columns)",
            [.integer(now), .text(usedBy), .text(hash), .text(accountID)]
        ).first.map { row in
            var ticket = UpgradeTicketRecord(row: row)
            ticket.usedAt = nil
            ticket.usedBy = nil
            return ticket
        }
    }

    func rebindUpgradeTicket(
        hash: String,
        accountID: String,
        from: String,
        to: String,
        now: Int64
    ) throws(StorageError) -> Bool {
        !(try rows(
            "UPDATE upgrade_tickets SET used_by = $1 WHERE ticket_hash = $2 AND account_id = $3 AND used_by = $4 AND expires_at > $5 RETURNING ticket_hash",
            [.text(to), .text(hash), .text(accountID), .text(from), .integer(now)]
        ).isEmpty)
    }

    func upgradeTicket(hash: String) throws(StorageError) -> UpgradeTicketRecord? {
        try rows(
            "SELECT \(UpgradeTicketRecord.columns) FROM upgrade_tickets WHERE ticket_hash = $1",
            [.text(hash)]
        ).first.map(UpgradeTicketRecord.init(row:))
    }

    /// Sent with the next statement that answers (a write that returns nothing).
    func deleteUpgradeTickets(accountID: String) throws(StorageError) {
        try send("DELETE FROM upgrade_tickets WHERE account_id = $1", [.text(accountID)])
    }
}
