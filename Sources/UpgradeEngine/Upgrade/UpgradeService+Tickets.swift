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
    ) throws(UpgradeFailure) -> IssuedUpgradeTicket {
        try Self.require(username, "username", maxBytes: Self.maxUsernameBytes)
        let prepared: Username
        do {
            prepared = try Username(username)
        } catch {
            throw UpgradeFailure(
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
                    throw UpgradeFailure(.accountNotFound, "no account has this username")
                }
                guard account.credentialKind == .password, try tx.passwordCredential(accountID: account.id) != nil
                else {
                    throw UpgradeFailure(
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
