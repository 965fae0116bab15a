extension TransferService {
    /// Inside the transition's write transaction: the webhook event a transfer transition tells
    /// of, if any. `before` and `after` are the account's Apple link around the transition.
    static func enqueueWebhook(
        _ transition: TransferTransition,
        event: TransferEvent,
        accountID: String,
        before: AppleLinkRecord,
        after: AppleLinkRecord,
        in tx: any StoreTransaction,
        now: Int64
    ) throws(StorageError) {
        guard transition.stateChanged, transition.from != transition.to else { return }
        let type: WebhookEventType
        var data: [(String, JWSJSON)] = [("accountId", .string(accountID))]
        switch (event, transition.to) {
        case (.transferIdentifierObtained, .transferPrepared):
            type = .transferPrepared
            data.append(("sub", .string(before.sub)))
        case (.newSubObtained, .transferred), (.signedInWithTransferSub, .transferred):
            type = .transferCompleted
            data += [
                ("oldSub", .string(before.sub)), ("newSub", .string(after.sub)),
                ("email", after.email.map(JWSJSON.string) ?? .null),
            ]
        case (.consentRevoked, .revoked):
            type = .appleConsentRevoked
            data.append(("sub", .string(after.sub)))
        case (.accountDeleted, .deleted):
            type = .appleAccountDeleted
            data.append(("sub", .string(after.sub)))
        default:
            return
        }
        try WebhookOutbox.enqueue(type, accountID: accountID, data: data, in: tx, now: now)
    }
}
