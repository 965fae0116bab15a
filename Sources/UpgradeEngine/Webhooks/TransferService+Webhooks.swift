extension TransferService {
    /// The webhook event a transfer transition tells of, if any, to insert in the transition's
    /// write transaction. `before` and `after` are the account's Apple link around the transition.
    static func webhookEvent(
        _ transition: TransferTransition,
        event: TransferEvent,
        accountID: String,
        before: AppleLinkRecord,
        after: AppleLinkRecord,
        now: Int64
    ) -> WebhookEventRecord? {
        guard transition.stateChanged, transition.from != transition.to else { return nil }
        let type: WebhookEventType
        var data: [(String, JSONValue)] = [("accountId", .string(accountID))]
        switch (event, transition.to) {
        case (.transferIdentifierObtained, .transferPrepared):
            type = .transferPrepared
            data.append(("sub", .string(before.sub)))
        case (.newSubObtained, .transferred), (.signedInWithTransferSub, .transferred):
            type = .transferCompleted
            data += [
                ("oldSub", .string(before.sub)), ("newSub", .string(after.sub)),
                ("email", after.email.map(JSONValue.string) ?? .null),
            ]
        case (.consentRevoked, .revoked):
            type = .appleConsentRevoked
            data.append(("sub", .string(after.sub)))
        case (.accountDeleted, .deleted):
            type = .appleAccountDeleted
            data.append(("sub", .string(after.sub)))
        default:
            return nil
        }
        return WebhookOutbox.event(type, accountID: accountID, data: data, now: now)
    }
}
