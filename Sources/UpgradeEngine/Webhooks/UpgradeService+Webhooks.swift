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
