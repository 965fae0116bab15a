/// Read-only questions from support staff and the app's backend (admin tokens with the `audit` or
/// `accounts` scope, or the operator's `upgrade-cli`): audit search and the account overview. The
/// callers are trusted, so an unknown username is said to be unknown (`accountNotFound`), unlike on
/// the public routes where it looks like a wrong password.
public struct AdminQueryService: Sendable {
    let store: any UpgradeStore

    public init(store: any UpgradeStore) { self.store = store }

    /// One page of an audit search and where the next one starts.
    public struct AuditPage: Sendable, Equatable {
        public var events: [AuditEvent]
        /// The `beforeID` of the next page; nil when this page is the last.
        public var nextBeforeID: Int64?
    }

    /// What is waiting in the database, for `/metrics`: counted there, so every instance reports the
    /// same numbers.
    public struct Backlog: Sendable, Equatable {
        /// Apple refresh tokens of deleted accounts not yet revoked at Apple.
        public var pendingAppleRevocations: Int
        public var webhooks: WebhookOutboxCounts
        /// Clients whose failed credential checks or wrong admin tokens still count against them;
        /// nil when not asked for.
        public var clientsInDebt: Int?
        /// Accounts whose password the legacy login system has not yet vouched for.
        public var legacyPasswords = 0
        /// Accounts with a password hash the server checks (legacy passwords not included).
        public var passwordAccounts = 0
        /// Accounts that sign in with Apple only.
        public var appleOnlyAccounts = 0
        /// The earliest due time of an Apple link check that is due and not done (nil: none).
        public var oldestDueAppleLinkCheck: Int64? = nil
    }

    /// The backlog, read in one transaction; `clients` asks for the clients in debt too.
    public func backlog(clients: Bool, now: Int64) throws(ServiceFailure) -> Backlog {
        do {
            return try store.read { tx in
                // The migration report's account counts (`ReportService`), from the same indexes.
                let accounts = try tx.accountCredentialCounts()
                return Backlog(
                    pendingAppleRevocations: try tx.pendingAppleRevocationCount(),
                    webhooks: try tx.webhookOutboxCounts(),
                    clientsInDebt: clients ? try tx.clientsInDebt(now: now * 1000) : nil,
                    legacyPasswords: accounts.legacyPasswords,
                    passwordAccounts: max(0, (accounts.byKind["password"] ?? 0) - accounts.legacyPasswords),
                    appleOnlyAccounts: accounts.byKind["appleOnly"] ?? 0,
                    oldestDueAppleLinkCheck: try tx.oldestDueAppleLinkCheck(now: now)
                )
            }
        } catch {
            throw UpgradeService.storageFailure(error)
        }
    }

    /// How many events `GET /v1/admin/accounts/{username}` lists.
    public static let overviewEvents = 20
    /// Event types are short dotted names; a longer filter cannot match one.
    static let maxEventBytes = 128

    /// The audit events `search` selects, newest first, with `username` (resolved through
    /// `Username`, in the same snapshot as the search) narrowing them to one account when given.
    /// `search.accountID` is ignored: accounts are named by username here.
    public func searchAudit(username: String?, _ search: AuditSearch) throws(ServiceFailure) -> AuditPage {
        guard AuditSearch.limits.contains(search.limit) else {
            throw ServiceFailure(
                .validation,
                "limit must be between \(AuditSearch.limits.lowerBound) and \(AuditSearch.limits.upperBound)"
            )
        }
        // As the report refuses it: an empty or reversed window is a mistake, not a question.
        if let since = search.since, let until = search.until, since >= until {
            throw ServiceFailure(.validation, "since must be before until")
        }
        if let event = search.event, event.isEmpty || event.utf8.count > Self.maxEventBytes {
            throw ServiceFailure(.validation, "type must be 1 to \(Self.maxEventBytes) bytes")
        }
        let account = try username.map { (typed) throws(ServiceFailure) in try Self.username(typed, field: "account") }
        // One row more than the page shows, to know whether another page follows.
        var query = search
        query.limit = search.limit + 1
        let events: [AuditEvent]
        do {
            events = try store.read { tx in
                if let account {
                    guard let found = try tx.account(username: account) else {
                        throw ServiceFailure(.accountNotFound, "no account has this username")
                    }
                    query.accountID = found.id
                } else {
                    query.accountID = nil
                }
                return try tx.auditEvents(query)
            }
        } catch {
            throw Self.readFailure(error)
        }
        let page = Array(events.prefix(search.limit))
        return AuditPage(events: page, nextBeforeID: events.count > search.limit ? page.last?.id : nil)
    }

    /// The overview of the account named `username` with its last `events` audit events.
    public func account(username: String, events: Int = overviewEvents) throws(ServiceFailure) -> AccountOverview {
        let name = try Self.username(username, field: "username")
        do {
            return try store.read { tx in
                guard let overview = try AccountOverview.read(username: name, events: events, in: tx) else {
                    throw ServiceFailure(.accountNotFound, "no account has this username")
                }
                return overview
            }
        } catch {
            throw Self.readFailure(error)
        }
    }

    /// A failure thrown inside the read as it is; a storage error as the upgrade calls report one,
    /// but worded for a read.
    static func readFailure(_ error: any Error) -> ServiceFailure {
        var failure = UpgradeService.storageFailure(error)
        if failure.kind == .internalError, !(error is ServiceFailure) {
            failure.message = "the database could not answer; nothing changed, retry later"
        }
        return failure
    }

    /// `typed` through `Username`; a refusal names `field`, the parameter the caller filled in.
    static func username(_ typed: String, field: String) throws(ServiceFailure) -> Username {
        do {
            return try Username(typed)
        } catch {
            throw ServiceFailure(
                .validation,
                error.code == .empty ? "\(field) is required" : "\(field): \(error.message)"
            )
        }
    }
}
