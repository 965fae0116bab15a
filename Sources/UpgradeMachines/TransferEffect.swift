/// Work the driver performs for a transfer transition.
public enum TransferEffect: Sendable, Hashable {
    /// Sender team: `POST /auth/usermigrationinfo` with `sub` and the target team (docs/apple-protocol.md §3.3),
    /// then apply `transferIdentifierObtained` or `stepFailed`. 429 and 5xx are retried by the
    /// driver with backoff and are not a per-user failure.
    case requestTransferIdentifier(sub: String)
    /// Recipient team: `POST /auth/usermigrationinfo` with `transfer_sub` (docs/apple-protocol.md §3.4), then
    /// apply `newSubObtained` or `stepFailed`.
    case exchangeTransferIdentifier(transferSub: String)
    /// In the transaction that persists `transferred`: re-key the account's Apple link from the
    /// sender team's `sub` to the recipient team's. Tokens stored for the old `sub` belong to the
    /// sender team and are dropped with it.
    case relinkAppleAccount(from: String, to: String)
    /// In the same transaction: the address Apple gave the recipient team (a new private relay
    /// address when the user hides their email). Emitted only when Apple supplied one.
    case updateEmail(String)
    /// In the transaction that records the first step of a later transfer: keep the finished
    /// transfer's record as history (its ids stay answerable) and start a new record from the
    /// account's current id.
    case retireFinishedTransfer
}
