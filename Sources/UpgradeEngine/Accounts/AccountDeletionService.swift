import Foundation

/// Deletes accounts (`DELETE /v1/admin/accounts/{username}`, `upgrade-cli accounts delete`), as
/// Apple asks of apps that create accounts (TN3194), in one transaction: the account row and, by the
/// schema's cascades, its password, TOTP, recovery codes, profile, upgrade sessions and tickets,
/// password changes, transfer record and Apple link; what names the person elsewhere, erased
/// (`eraseTraces`); a tombstone audit row `account.deleted` naming the account id only; and, when the
/// link holds a refresh token, a row in the revocation queue with the token still sealed
/// (docs/architecture.md §7.1). Nothing here calls Apple: `AppleRevocationSender` sends the queue.
public struct AccountDeletionService: Sendable {
    let store: any UpgradeStore

    public init(store: any UpgradeStore) {
        self.store = store
    }

    /// Deletes the account named `username` (in its enforced form). `deletedBy` names who asked (an
    /// admin token's name, `cli`) for the tombstone. An unknown username is `accountNotFound` and
    /// changes nothing.
    /// `claim`, when given, is written with the revocation row (`AppleRevocationSender.claimForNewRow`).
    public func delete(
        username: String,
        deletedBy: String,
        now: Int64,
        claim: AppleRevocationClaim? = nil
    ) throws(ServiceFailure) -> AccountDeletion {
        let prepared: Username
        do {
            prepared = try Username(username)
        } catch {
            throw ServiceFailure(
                .validation,
                error.code == .empty ? "username is required" : "username: \(error.message)"
            )
        }
        let revocationID = Self.newRevocationID()
        do {
            return try store.write { tx in
                guard let account = try tx.account(username: prepared) else {
                    throw ServiceFailure(.accountNotFound, "no account has this username")
                }
                var queued: String?
                let link = try tx.appleLink(accountID: account.id)
                let transfer = try tx.transferRecord(accountID: account.id)
                // Read before the delete, which takes the retired records with the account.
                let retired = try tx.retiredTransferRecords(accountID: account.id)
                if let link, let sealed = link.refreshTokenCiphertext, !sealed.isEmpty {
                    try tx.insertAppleRevocation(
                        AppleRevocationRecord(
                            id: revocationID,
                            accountID: account.id,
                            tokenCiphertext: sealed,
                            clientID: link.clientID,
                            createdAt: now,
                            nextAttemptAt: now,
                            claimToken: claim?.token,
                            claimedUntil: claim?.until
                        )
                    )
                    queued = revocationID
                }
                guard try tx.deleteAccount(id: account.id) else {
                    throw ServiceFailure(.accountNotFound, "no account has this username")
                }
                try Self.eraseTraces(of: account, appleIDs: Self.appleIDs(link, transfer, retired: retired), in: tx)
                // The account id only: the username, email and sub went with the account.
                try tx.appendAudit(
                    AuditEvent(
                        at: now,
                        accountID: account.id,
                        upgradeID: nil,
                        event: "account.deleted",
                        detail: [
                            "by": deletedBy, "appleRevocation": queued == nil ? "none" : "queued",
                            // For the migration report's accounts per day (docs/architecture.md §7.7).
                            "credentialKind": account.credentialKind.rawValue,
                        ]
                    )
                )
                // The account id only, as in the audit row: the backend knows whom it named.
                try WebhookOutbox.enqueue(
                    .accountDeleted,
                    accountID: account.id,
                    data: [("accountId", .string(account.id))],
                    in: tx,
                    now: now
                )
                return AccountDeletion(accountID: account.id, revocationID: queued)
            }
        } catch {
            throw UpgradeService.storageFailure(error)
        }
    }

    /// `delete`, then, when the account had a refresh token, its revocation through `revocations`
    /// (`DELETE /v1/admin/accounts/{username}` and `upgrade-cli accounts delete` alike): one
    /// attempt, and one more after each of `waits` while Apple leaves it pending, on the calling
    /// thread (`BlockingRunner`). Whatever is not sent stays queued for the revocation worker; a
    /// storage error of an attempt leaves it `pending`, with the error in `revocationError`.
    public func deleteAndRevoke(
        username: String,
        deletedBy: String,
        revocations: AppleRevocationSender?,
        waits: [Duration] = [],
        clock: @escaping @Sendable () -> Int64
    ) throws(ServiceFailure) -> AccountDeletion {
        let now = clock()
        let claim = revocations?.claimForNewRow(now: now)
        var deletion = try delete(username: username, deletedBy: deletedBy, now: now, claim: claim)
        guard let id = deletion.revocationID else { return deletion }
        deletion.appleRevocation = .pending
        guard let revocations else { return deletion }
        for attempt in 0...waits.count {
            do {
                deletion.appleRevocation = try BlockingRunner.run {
                    () async throws(StorageError) -> AppleRevocationSender.Outcome in
                    // The first attempt holds the claim written with the row; later ones claim anew.
                    try await revocations.attempt(id: id, holding: attempt == 0 ? claim : nil, clock: clock)
                }
            } catch {
                deletion.revocationError = error.description
                break
            }
            guard deletion.appleRevocation == .pending, attempt < waits.count else { break }
            Thread.sleep(forTimeInterval: Double(waits[attempt].components.seconds))
        }
        return deletion
    }

    static func newRevocationID() -> String { "rev_" + SecureRandom.token(byteCount: 16) }
}

/// What a deletion did: the deleted account's id, and the queued revocation of its Apple refresh
/// token (nil when the account had none: a password account, or a link without a token).
public struct AccountDeletion: Sendable, Equatable {
    public let accountID: String
    public let revocationID: String?
    /// After `deleteAndRevoke`: whether Apple revoked the token (nil: there was none to revoke).
    public var appleRevocation: AppleRevocationSender.Outcome?
    /// Why an attempt at the revocation failed (a storage error), for the log; the queue retries it.
    public var revocationError: String?

    public init(accountID: String, revocationID: String?) {
        self.accountID = accountID
        self.revocationID = revocationID
    }
}
