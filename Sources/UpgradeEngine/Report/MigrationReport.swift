/// How the migration is going, as `upgrade-cli report` and `GET /v1/admin/report` show it (one JSON
/// document, `json`; docs/architecture.md §12). Read in one transaction by `ReportService`: the
/// accounts and the transfer and outbox backlogs as they are at the end of the read, the upgrades
/// and password changes from the audit trail, counted by when each step happened inside the window
/// `[since, until)`. Names are the API's: statuses, `ASExtensionError` names for cancel reasons,
/// problem slugs for failures. Times are RFC 3339 (UTC), days `YYYY-MM-DD` (UTC).
public struct MigrationReport: Codable, Sendable, Equatable {
    /// The window's start; nil: from the first event on.
    public var since: String?
    /// The window's end (exclusive).
    public var until: String
    /// When the report was read.
    public var generatedAt: String
    /// Accounts by credential kind now.
    public var accounts: Accounts
    /// Per day of the window with any change: accounts created, converted and deleted, and those
    /// left on a password at the day's end.
    public var accountsPerDay: [AccountsDay]
    /// Upgrades to Sign in with Apple (`POST /v1/upgrades` and what follows).
    public var upgrades: Flow
    /// Strong-password changes (`POST /v1/password-changes` and what follows).
    public var passwordChanges: Flow
    /// The team transfer now.
    public var transfer: Transfer
    /// What waits to be sent now.
    public var outboxes: Outboxes

    public init(
        since: String?,
        until: String,
        generatedAt: String,
        accounts: Accounts,
        accountsPerDay: [AccountsDay],
        upgrades: Flow,
        passwordChanges: Flow,
        transfer: Transfer,
        outboxes: Outboxes
    ) {
        self.since = since
        self.until = until
        self.generatedAt = generatedAt
        self.accounts = accounts
        self.accountsPerDay = accountsPerDay
        self.upgrades = upgrades
        self.passwordChanges = passwordChanges
        self.transfer = transfer
        self.outboxes = outboxes
    }
}
