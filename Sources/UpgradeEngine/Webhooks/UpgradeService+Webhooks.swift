extension UpgradeService {
    /// Inside the transition's write transaction: `upgrade.failed` when `transition` ended the
    /// upgrade of a known account as failed (an upgrade for an unknown username tells of no account).
    static func enqueueFailure(
        _ transition: UpgradeTransition,
        machine: UpgradeStateMachine,
        record: UpgradeSessionRecord,
        in tx: any StoreTransaction,
        now: Int64
    ) throws(StorageError) {
        guard transition.to == .failed, transition.from != .failed, let accountID = record.accountID,
            case .failed(let failed) = machine.state
        else { return }
        try WebhookOutbox.enqueue(
            .upgradeFailed,
            accountID: accountID,
            data: [
                ("accountId", .string(accountID)), ("upgradeId", .string(record.id)),
                ("reason", .string(failed.reason.rawValue)),
            ],
            in: tx,
            now: now
        )
    }
}

extension UpgradeService {
    /// The account's profile as `account.converted` and `account.profile-filled` carry it, one shape
    /// for both (Schema/webhooks.md): contact email and display name with where each came from, the
    /// name's parts the device forwarded, and the token's `real_user_status`; `null` for what the
    /// account has not. `email`, `displayName` and `fullName` name the person, so a deletion nulls
    /// them (`PersonalData.payloadKeys`).
    static func profileData(_ profile: AccountProfileRecord?) -> [(String, JSONValue)] {
        [
            ("displayName", profile?.displayName.map(JSONValue.string) ?? .null),
            ("displayNameSource", profile?.displayNameSource.map { .string($0.rawValue) } ?? .null),
            ("email", profile?.email.map(JSONValue.string) ?? .null),
            ("emailSource", profile?.emailSource.map { .string($0.rawValue) } ?? .null),
            ("fullName", profile?.fullName?.json ?? .null),
            ("realUserStatus", profile?.realUserStatus.map { .string($0.name) } ?? .null),
        ]
    }
}
