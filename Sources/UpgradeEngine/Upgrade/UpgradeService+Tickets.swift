/// A ticket minted for an in-app upgrade: the value to hand to the app, and when it expires.
public struct IssuedUpgradeTicket: Sendable, Equatable {
    /// Shown once; only its SHA-256 is stored.
    public let ticket: String
    public let expiresAt: Int64
}

extension UpgradeService {
    /// What every ticket starts with, so a leaked one is recognisable.
    public static let ticketPrefix = "siwa_ticket_"

    /// `POST /v1/upgrade-tickets`, called by the app's backend (an admin token with the `tickets`
    /// scope) for its signed-in user: a one-time ticket bound to that account, valid
    /// `configuration.ticketLifetime` seconds, that the extension sends with an empty password
    /// (docs/architecture.md §4.2). `secondFactorVerified` says the backend checked the user's second
    /// factor itself, so a TOTP account goes straight to Apple's sheet. The caller is trusted, so an
    /// unknown username is `accountNotFound` and an Apple-only account `notEligible`.
    public func issueTicket(
        username: String,
        secondFactorVerified: Bool,
        issuedBy: String,
        now: Int64
    ) throws(ServiceFailure) -> IssuedUpgradeTicket {
        try Self.require(username, "username", maxBytes: Self.maxUsernameBytes)
        let prepared: Username
        do {
            prepared = try Username(username)
        } catch {
            throw ServiceFailure(
                .validation,
                error.code == .empty ? "username is required" : "username: \(error.message)"
            )
        }
        // 256 random bits; the database keeps only the hash, like the state and nonce.
        let ticket = Self.ticketPrefix + Self.newOneTimeValue()
        let expiresAt = now + configuration.ticketLifetime
        do {
            try store.write { tx in
                guard let account = try tx.account(username: prepared) else {
                    throw ServiceFailure(.accountNotFound, "no account has this username")
                }
                guard account.credentialKind == .password, try tx.passwordCredential(accountID: account.id) != nil
                else {
                    throw ServiceFailure(
                        .notEligible,
                        "the account has no password to replace; it already signs in with Apple"
                    )
                }
                try tx.insertUpgradeTicket(
                    UpgradeTicketRecord(
                        ticketHash: Self.hashOneTimeValue(ticket),
                        accountID: account.id,
                        secondFactorVerified: secondFactorVerified,
                        createdAt: now,
                        expiresAt: expiresAt
                    ),
                    now: now
                )
                try tx.appendAudit(
                    AuditEvent(
                        at: now,
                        accountID: account.id,
                        upgradeID: nil,
                        event: "ticket.issued",
                        detail: [
                            "issuedBy": issuedBy, "secondFactorVerified": secondFactorVerified ? "true" : "false",
                        ]
                    )
                )
            }
        } catch {
            throw Self.storageFailure(error)
        }
        return IssuedUpgradeTicket(ticket: ticket, expiresAt: expiresAt)
    }
}

extension UpgradeService {
    /// Inside the write transaction of the flow `flowID` (an upgrade's `upg_` id or a password change's
    /// `pwc_` id), for which the ticket stands in for the password: spends it if it is `accountID`'s,
    /// unexpired and unused, or takes it over from the flow of the same kind it was spent on, if that
    /// flow never got past needing the user (`mayPresentAgain`). Returns the ticket, or nil: unknown,
    /// another account's, expired, or spent on a flow that converted, completed, failed, expired or
    /// was cancelled other than for user interaction. Both writes are conditional, so of two calls
    /// presenting one ticket at once at most one gets it.
    func spendTicket(
        hash: String,
        accountID: String?,
        for flowID: String,
        in tx: any StoreTransaction,
        now: Int64
    ) throws -> UpgradeTicketRecord? {
        guard let accountID,
            let ticket = try usableTicket(hash: hash, accountID: accountID, for: flowID, in: tx, now: now)
        else { return nil }
        guard let previous = ticket.usedBy, ticket.usedAt != nil else {
            return try tx.consumeUpgradeTicket(hash: hash, accountID: accountID, usedBy: flowID, now: now)
        }
        let moved = try tx.rebindUpgradeTicket(hash: hash, accountID: accountID, from: previous, to: flowID, now: now)
        return moved ? ticket : nil
    }

    /// The ticket if `spendTicket` would give it to a new flow like `flowID`, read without spending it.
    func usableTicket(
        hash: String,
        accountID: String,
        for flowID: String,
        in tx: any StoreTransaction,
        now: Int64
    ) throws -> UpgradeTicketRecord? {
        guard let ticket = try tx.upgradeTicket(hash: hash), ticket.accountID == accountID, ticket.expiresAt > now
        else { return nil }
        guard ticket.usedAt != nil else { return ticket }
        guard let previous = ticket.usedBy, try mayPresentAgain(after: previous, newFlow: flowID, in: tx, now: now)
        else { return nil }
        return ticket
    }

    /// Whether a ticket spent on the flow `previous` may be presented again for a new flow of the same
    /// kind: the extension's silent call asked for a second factor (or for Apple's sheet) and the
    /// system then calls its interactive path, which sends the same ticket (docs/architecture.md §5).
    /// Yes while `previous` is open and not converting (the new flow supersedes it) or was cancelled
    /// with `userInteractionRequired`; no once it converted, completed, failed, expired, or was
    /// cancelled otherwise (the user's cancel, or superseded by another credential). Wrong codes across
    /// such flows all count against the username's lockout, as wrong passwords do.
    private func mayPresentAgain(
        after previous: String,
        newFlow: String,
        in tx: any StoreTransaction,
        now: Int64
    ) throws -> Bool {
        guard previous.prefix(4) == newFlow.prefix(4) else { return false }
        if previous.hasPrefix("pwc_") {
            guard let record = try tx.passwordChange(id: previous) else { return false }
            let machine = try restore(record)
            if machine.hasExpired(now: now) { return false }
            switch machine.state {
            case .started, .stepUpRequired: return true
            case .cancelled(let cancelled): return cancelled.reason == .userInteractionRequired
            case .completed, .failed, .expired: return false
            }
        }
        guard let record = try tx.upgradeSession(id: previous) else { return false }
        let machine = try restore(record)
        if machine.hasExpired(now: now) { return false }
        switch machine.state {
        case .started, .stepUpRequired, .awaitingAppleCredential: return true
        case .cancelled(let cancelled): return cancelled.reason == .userInteractionRequired
        case .converting, .completed, .failed, .expired: return false
        }
    }
}
