/// What a deletion erases besides the account's own rows (docs/architecture.md §7.1): the rows that
/// outlive it, because the audit trail is kept, the outbox is replayed and some rows are keyed by the
/// name rather than the account, still name its person. Each is erased or redacted in the deletion's
/// transaction, so no committed state has the account gone and its name, email or Apple id left.
extension AccountDeletionService {
    /// Every Apple id the account was known by: the link's `sub`, and each team transfer's old id,
    /// transfer id and new id, the earlier transfers' (`retired`) too.
    static func appleIDs(
        _ link: AppleLinkRecord?,
        _ transfer: TransferRecord?,
        retired: [RetiredTransferRecord] = []
    ) -> [String] {
        let records = (transfer.map { [$0] } ?? []) + retired.map(\.record)
        var ids: [String] = []
        for id in [link?.sub] + records.flatMap({ [$0.oldSub, $0.transferSub, $0.newSub] }) {
            if let id, !id.isEmpty, !ids.contains(id) { ids.append(id) }
        }
        return ids
    }

    /// - The audit trail: in the account's rows every value that names a person (`PersonalData.keys`:
    ///   Apple ids, the username before a re-keying...) becomes `[redacted]`, and so does any of its
    ///   Apple ids in other accounts' rows. Ids, times, events and statuses stay: the trail still
    ///   says what happened to account id X, not to whom.
    /// - The webhook outbox: those members of its earlier events' `data` become `null`, so neither a
    ///   pending event nor a replay sends them (Schema/webhooks.md).
    /// - Upgrades and password changes asked for its username while no account had it, which keep the
    ///   name as typed.
    /// - The username's row in the failed-login throttle, keyed by the name: with no account behind
    ///   it, a count of wrong passwords for that name protects nothing.
    static func eraseTraces(of account: AccountRecord, appleIDs: [String], in tx: any StoreTransaction) throws {
        try tx.redactAudit(accountID: account.id, subs: appleIDs)
        try tx.redactWebhookEvents(accountID: account.id)
        try tx.deleteAccountlessUpgradeSessions(usernameKey: account.username)
        try tx.deleteAccountlessPasswordChanges(usernameKey: account.username)
        try tx.clearFailures(usernameKey: account.username)
    }
}
