/// One-time tickets for in-app upgrades, inside a transaction. A ticket is stored only as the
/// SHA-256 of its value (`ticketHash`), bound to one account.
public protocol UpgradeTicketStore {
    /// Stores a new ticket, first deleting tickets expired by `now`; a hash already stored fails with
    /// `.uniqueViolation` (a 256-bit collision: never, in practice).
    func insertUpgradeTicket(_ ticket: UpgradeTicketRecord, now: Int64) throws(StorageError)
    /// Spends the ticket on the flow `usedBy` (an upgrade's or password change's id) if it is
    /// `accountID`'s, unused and unexpired at `now`, in one conditional write: of two concurrent
    /// callers at most one gets it. Returns the ticket as it was before, or nil (unknown, another
    /// account's, used, or expired; a ticket for another account stays unspent).
    func consumeUpgradeTicket(
        hash: String,
        accountID: String,
        usedBy: String,
        now: Int64
    ) throws(StorageError) -> UpgradeTicketRecord?
    /// Moves a spent ticket from the flow `from` to the flow `to`, if it is `accountID`'s, unexpired at
    /// `now` and still spent on `from`, in one conditional write: of two callers presenting it again
    /// at once, at most one moves it. Returns whether it moved.
    func rebindUpgradeTicket(
        hash: String,
        accountID: String,
        from: String,
        to: String,
        now: Int64
    ) throws(StorageError) -> Bool
    func upgradeTicket(hash: String) throws(StorageError) -> UpgradeTicketRecord?
    /// Deletes every ticket of the account, spent or not (its credentials changed).
    func deleteUpgradeTickets(accountID: String) throws(StorageError)
}

/// A row of `upgrade_tickets`.
public struct UpgradeTicketRecord: Sendable, Equatable {
    public var ticketHash: String
    public var accountID: String
    /// The app's backend checked the account's second factor itself when it asked for the ticket.
    public var secondFactorVerified: Bool
    public var createdAt: Int64
    public var expiresAt: Int64
    public var usedAt: Int64?
    /// The upgrade or password change the ticket was last spent on.
    public var usedBy: String?

    public init(
        ticketHash: String,
        accountID: String,
        secondFactorVerified: Bool,
        createdAt: Int64,
        expiresAt: Int64,
        usedAt: Int64? = nil,
        usedBy: String? = nil
    ) {
        self.ticketHash = ticketHash
        self.accountID = accountID
        self.secondFactorVerified = secondFactorVerified
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.usedAt = usedAt
        self.usedBy = usedBy
    }

    static let columns = "ticket_hash, account_id, second_factor_verified, created_at, expires_at, used_at, used_by"

    init(row: [SQLValue]) {
        self.init(
            ticketHash: row[0].string ?? "",
            accountID: row[1].string ?? "",
            secondFactorVerified: row[2].int == 1,
            createdAt: row[3].int ?? 0,
            expiresAt: row[4].int ?? 0,
            usedAt: row[5].int,
            usedBy: row[6].string
        )
    }
}
