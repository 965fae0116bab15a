/// A transfer record of an earlier transfer: the account's record as it stood when a later
/// transfer of the same account began (docs/apple-protocol.md §3.2, "A later transfer"), kept so
/// that the ids it holds stay answerable. Never changed after it is written.
public struct RetiredTransferRecord: Sendable, Equatable {
    /// The record as it was stored, version included.
    public var record: TransferRecord
    /// When the later transfer's first step retired it.
    public var retiredAt: Int64

    public init(record: TransferRecord, retiredAt: Int64) {
        self.record = record
        self.retiredAt = retiredAt
    }
}
