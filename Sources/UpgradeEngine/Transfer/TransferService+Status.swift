extension TransferService {
    /// `transfer status`: accounts per transfer state, accounts never touched, and the window.
    public func status(now: Int64) throws(TransferFailure) -> TransferStatusReport {
        try Self.status(store: store, now: now)
    }

    /// The same, from a store alone: reading the status needs no Apple client.
    public static func status(store: any UpgradeStore, now: Int64) throws(TransferFailure) -> TransferStatusReport {
        let progress: TransferProgress
        do {
            progress = try store.read { try $0.transferProgress() }
        } catch {
            throw Self.storageFailure(error)
        }
        var counts = Dictionary(uniqueKeysWithValues: TransferStatus.allCases.map { ($0, 0) })
        for (raw, count) in progress.recordsByStatus {
            guard let status = TransferStatus(rawValue: raw) else {
                throw TransferFailure(.internalError, "\(count) transfer record(s) have the unknown status '\(raw)'")
            }
            counts[status, default: 0] += count
        }
        return TransferStatusReport(
            counts: counts,
            untouchedLinkedAccounts: progress.untouchedLinkedAccounts,
            windowEndsAt: progress.latestWindowEndsAt,
            windowSecondsLeft: progress.latestWindowEndsAt.map { max(0, $0 - now) },
            windows: progress.windows,
            strandedAccounts: progress.strandedAccounts
        )
    }
}
