import Foundation

/// Moves every sealed value to the newest key of a keyring (`keys reseal`; docs/architecture.md §10.4),
/// in batches of one write transaction each:
/// read up to `batchSize` values not under the newest key, open each with the key it names, seal it
/// again under the newest, check that the new value opens to the same plaintext, and store it only
/// if the stored value is still the one read (compare-and-set).
///
/// Crash safety: a batch commits whole or not at all, and a committed value is under the newest key,
/// so the next run never selects it again; a killed run leaves every value either as it was or
/// re-sealed, and a rerun finishes the rest. A value is never written unless its new form opens.
public struct SealedValueResealer: Sendable {
    /// What a batch did, for progress lines.
    public struct Progress: Sendable, Equatable {
        public var kind: SealedValueKind
        /// Values of `kind` re-sealed so far in this run.
        public var resealed: Int
        /// Values of `kind` not under the newest key when the run started.
        public var total: Int64
    }

    /// A value that could not be re-sealed, and why (a key id, never key bytes or plaintext).
    public struct Failure: Sendable, Equatable {
        public var kind: SealedValueKind
        public var key: String
        public var reason: String
    }

    public struct Summary: Sendable, Equatable {
        public var newestKeyID: String
        public var resealed: [SealedValueKind: Int] = [:]
        /// Values that changed between the read and the write (another writer won): left as they
        /// are; a rerun picks them up if they are still under an old key.
        public var changedMeanwhile = 0
        public var failures: [Failure] = []
        /// True when the run stopped early (`shouldStop`, or `blocker`).
        public var stopped = false
        /// Why `blocker` stopped the run before a batch (a running instance that cannot open the
        /// newest key), or nil.
        public var blocked: String?

        public var totalResealed: Int { resealed.values.reduce(0, +) }
    }

    public let store: any UpgradeStore
    public let secrets: SecretBox
    public let batchSize: Int

    public init(store: any UpgradeStore, secrets: SecretBox, batchSize: Int = 500) {
        self.store = store
        self.secrets = secrets
        self.batchSize = max(1, batchSize)
    }

    /// Re-seals every value not under `secrets`' newest key. `shouldStop` is asked between batches
    /// (a lost job lease); `onBatch` after each committed batch. `blocker` is asked before each
    /// batch too: a reason there stops the run (`Summary.blocked`), e.g. a `serve` instance started
    /// since the run began with a keyring that lacks the newest key (`RunningKeyrings.resealProblem`),
    /// so that at most one batch it cannot open is written after it appeared.
    public func run(
        now: Int64 = Int64(Date().timeIntervalSince1970),
        onBatch: (Progress) -> Void = { _ in },
        shouldStop: () -> Bool = { false },
        blocker: () throws -> String? = { nil }
    ) throws -> Summary {
        let newest = secrets.newestKeyID
        var summary = Summary(newestKeyID: newest)
        // Re-sealing under a key that is not the one its id names elsewhere would move values out of
        // every other instance's reach: refused, and the newest key's check recorded if it has none.
        if let problem = try KeyChecks.verify(store: store, secrets: secrets, now: now) {
            throw KeyCheckFailure(problem)
        }
        let before = try KeyringStatus.load(store: store, secrets: secrets)
        for kind in SealedValueKind.allCases {
            let total = before.counts.filter { $0.kind == kind && $0.keyID != newest }.reduce(0) { $0 + $1.count }
            var progress = Progress(kind: kind, resealed: 0, total: total)
            var after: String?
            while true {
                if shouldStop() {
                    summary.stopped = true
                    return summary
                }
                if let reason = try blocker() {
                    summary.stopped = true
                    summary.blocked = reason
                    return summary
                }
                let batch = try store.write { tx in try reseal(kind, newest: newest, after: after, tx) }
                guard let last = batch.lastKey else { break }
                after = last
                progress.resealed += batch.resealed
                summary.resealed[kind, default: 0] += batch.resealed
                summary.changedMeanwhile += batch.changed
                summary.failures += batch.failures
                onBatch(progress)
            }
        }
        return summary
    }

    private struct Batch {
        var lastKey: String?
        var resealed = 0
        var changed = 0
        var failures: [Failure] = []
    }

    /// One batch, inside one write transaction. It may run more than once (a retried transaction):
    /// sealing again is harmless, and only the last run commits.
    private func reseal(
        _ kind: SealedValueKind,
        newest: String,
        after: String?,
        _ tx: any StoreTransaction
    ) throws -> Batch {
        let values = try tx.sealedValues(kind, notUnder: newest, after: after, limit: batchSize)
        var batch = Batch(lastKey: values.last?.key)
        for value in values {
            let context = kind.context(owner: value.owner)
            var plaintext: [UInt8]
            do {
                plaintext = try secrets.open(value.sealed, context: context)
            } catch {
                batch.failures.append(Failure(kind: kind, key: value.key, reason: error.message))
                continue
            }
            defer { for index in plaintext.indices { plaintext[index] = 0 } }
            let resealed = secrets.seal(plaintext, context: context)
            // Never store a value that does not open to what it replaces (a reload between the seal
            // and this check, a broken library): the old one stays.
            guard SecretBox.keyID(of: resealed) == newest, (try? secrets.open(resealed, context: context)) == plaintext
            else {
                batch.failures.append(
                    Failure(kind: kind, key: value.key, reason: "the re-sealed value did not open; left as it was")
                )
                continue
            }
            if try tx.replaceSealedValue(kind, key: value.key, expected: value.sealed, replacement: resealed) {
                batch.resealed += 1
            } else {
                batch.changed += 1
            }
        }
        return batch
    }
}
