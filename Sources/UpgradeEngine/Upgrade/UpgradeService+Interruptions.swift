extension UpgradeService {
    /// An upgrade as a call finds it, after any lapsed conversion has been failed.
    struct Loaded {
        var record: UpgradeSessionRecord
        var machine: UpgradeStateMachine
        /// This call moved a lapsed conversion to `failed(conversion-interrupted)`: it answers with that
        /// failure, whatever it was asked.
        var interruptedNow: Bool
    }

    /// Loads an upgrade; a conversion whose claim has lapsed (the server that claimed it stopped, or
    /// could not record the outcome) is failed with `conversion-interrupted` and an audit row first,
    /// so that every call (`GET`, credential, cancel, step-up) sees the same final state. The account
    /// itself needs nothing: a conversion commits in one transaction or not at all.
    func loadSettled(_ id: String, now: Int64) throws(ServiceFailure) -> Loaded {
        let record = try load(id)
        var machine = try restore(record)
        guard machine.conversionInterrupted(now: now) else {
            return Loaded(record: record, machine: machine, interruptedNow: false)
        }
        do {
            let committed = try commit(.deadlinePassed, detail: [:], record: record, machine: &machine, now: now)
            return Loaded(record: committed.record, machine: machine, interruptedNow: true)
        } catch let failure where failure.kind == .inProgress {
            // Another call settled or finished it meanwhile: answer from what it stored.
            let current = try load(id)
            return Loaded(record: current, machine: try restore(current), interruptedNow: false)
        }
    }

    /// At start-up: fails every conversion whose claim has lapsed, so that none waits for a client to
    /// touch it. Returns how many it failed. Conversions still inside their claim are left alone: on a
    /// shared database another instance may be finishing them; once lapsed, the next call settles them.
    public func failInterruptedConversions(now: Int64) throws(ServiceFailure) -> Int {
        var failed = 0
        while true {
            let lapsed: [UpgradeSessionRecord]
            do {
                lapsed = try store.read { try $0.conversions(expiringBy: now, limit: 500) }
            } catch {
                throw Self.storageFailure(error)
            }
            var settledInBatch = 0
            for record in lapsed where try loadSettled(record.id, now: now).interruptedNow {
                settledInBatch += 1
            }
            failed += settledInBatch
            // A batch that settled nothing (another instance got there first) ends the sweep too.
            if lapsed.count < 500 || settledInBatch == 0 { return failed }
        }
    }

    /// Commits the failure of a claimed conversion. The claim is the only thing that tells later calls
    /// the conversion is over, so a transient database error is retried (a few times, briefly) rather
    /// than dropped; if it still fails, the claim lapses and the conversion reads as interrupted.
    func commitConversionFailure(
        _ reason: UpgradeEvent.ConversionFailure,
        detail: [String: String],
        record: UpgradeSessionRecord,
        machine: UpgradeStateMachine,
        now: Int64
    ) async -> UpgradeStateMachine {
        for attempt in 0..<4 {
            var converting = machine
            do {
                _ = try commit(
                    .conversionFailed(reason),
                    detail: detail,
                    record: record,
                    machine: &converting,
                    now: now
                )
                return converting
            } catch {
                // `inProgress`: the record moved on (its claim lapsed and another call settled it).
                if error.kind == .inProgress { break }
                try? await Task.sleep(nanoseconds: UInt64(25_000_000 << attempt))
            }
        }
        return machine
    }
}
