/// One-time tickets for in-app upgrades. Writers are serialised (BEGIN IMMEDIATE), and spending is a
/// single conditional UPDATE, so a ticket is spent once.
extension SQLiteTransaction: UpgradeTicketStore {
    func insertUpgradeTicket(_ ticket: UpgradeTicketRecord, now: Int64) throws(StorageError) {
        try rows("DELETE FROM upgrade_tickets WHERE expires_at <= ?", [.integer(now)])
        try rows(
            "INSERT INTO upgrade_tickets (\(UpgradeTicketRecord.columns)) VALUES (?, ?, ?, ?, ?, ?, ?)",
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
            "UPDATE upgrade_tickets SET used_at = ?, used_by = ? WHERE ticket_hash = ? AND account_id = ? AND used_at IS NULL AND expires_at > ? RETURNING \(UpgradeTicketRecord.columns)",
            [.integer(now), .text(usedBy), .text(hash), .text(accountID), .integer(now)]
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
            "UPDATE upgrade_tickets SET used_by = ? WHERE ticket_hash = ? AND account_id = ? AND used_by = ? AND expires_at > ? RETURNING ticket_hash",
            [.text(to), .text(hash), .text(accountID), .text(from), .integer(now)]
        ).isEmpty)
    }

    func upgradeTicket(hash: String) throws(StorageError) -> UpgradeTicketRecord? {
        try rows(
            "SELECT \(UpgradeTicketRecord.columns) FROM upgrade_tickets WHERE ticket_hash = ?",
            [.text(hash)]
        ).first.map(UpgradeTicketRecord.init(row:))
    }

    func deleteUpgradeTickets(accountID: String) throws(StorageError) {
        try rows("DELETE FROM upgrade_tickets WHERE account_id = ?", [.text(accountID)])
    }
}
