import Synchronization

/// The parameter sets in `hash_parameter_sets`, opened with the server's secret key and kept in
/// memory. A set is never changed once stored, so a cached one stays right; an id not cached makes
/// it read the table again (an import in another process may have added it since), at most once a
/// second, so hashes naming a missing set cannot turn every check into a database read.
///
/// A set that does not open (another key) is remembered as unavailable, with its reason, for the
/// life of this source (its key does not change). No secret leaves this type but through
/// `hashParameterSet`.
public final class StoredHashParameters: HashParameterSource {
    private let store: any UpgradeStore
    private let secrets: SecretBox
    private let clock: @Sendable () -> ContinuousClock.Instant
    private struct Cache {
        var sets: [Int64: Result<HashParameterSet, PasswordHashError>] = [:]
        var loadedAt: ContinuousClock.Instant?
    }
    private let cache = Mutex(Cache())

    public init(
        store: any UpgradeStore,
        secrets: SecretBox,
        clock: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }
    ) {
        self.store = store
        self.secrets = secrets
        self.clock = clock
    }

    public func hashParameterSet(
        id: Int64?,
        kind: HashParameterSet.Kind
    ) throws(PasswordHashError)
        -> HashParameterSet
    {
        guard let id else {
            throw PasswordHashError(
                .parametersUnavailable,
                "the hash names no parameter set: give p=<id> of a stored one ('upgrade-cli hash-parameters add' "
                    + "prints the ids), or import the file with --hash-parameters"
            )
        }
        // One lock over the lookup and any reload: a check that misses while another reloads
        // waits for that reload and sees its result, instead of finding the set missing. Reloads
        // are rare (a new id, at most once a second), and hits take the lock only briefly.
        let result = cache.withLock { state -> Result<HashParameterSet, PasswordHashError>? in
            if let cached = state.sets[id] { return cached }
            let now = clock()
            if let loadedAt = state.loadedAt, now - loadedAt < .seconds(1) { return nil }
            state.loadedAt = now
            let records: [HashParameterSetRecord]
            do throws(StorageError) {
                records = try store.readStorageErrors { tx in try tx.hashParameterSets() }
            } catch {
                state.loadedAt = nil
                return .failure(
                    PasswordHashError(
                        .parametersUnavailable,
                        "hash parameter set \(id) could not be read: \(error.code)"
                    )
                )
            }
            for record in records where state.sets[record.id] == nil {
                state.sets[record.id] = Result { () throws(PasswordHashError) in
                    try HashParameterSet.open(record, with: secrets)
                }
            }
            return state.sets[id]
        }
        guard let result else { throw HashParameterSets.notStored(id) }
        return try result.get()
    }

    /// Stores each of `sets` unless an equal set of its kind is stored already, and returns the id
    /// each has, in order: an import run again with the same file names the same sets. Ids are
    /// taken one above the highest stored, in one write transaction (serialisable, so two imports
    /// adding sets at once cannot take the same id).
    public static func add(
        _ sets: [HashParameterSet],
        store: any UpgradeStore,
        secrets: SecretBox,
        now: Int64
    ) throws -> [Int64] {
        try store.write { tx in
            var existing = try tx.hashParameterSets()
            var ids: [Int64] = []
            for set in sets {
                let match = existing.first { record in
                    record.kind == set.kind.rawValue && (try? HashParameterSet.open(record, with: secrets)) == set
                }
                if let match {
                    ids.append(match.id)
                    continue
                }
                let id = (existing.map(\.id).max() ?? 0) + 1
                let record = HashParameterSetRecord(
                    id: id,
                    kind: set.kind.rawValue,
                    sealed: set.sealed(with: secrets, id: id),
                    createdAt: now
                )
                try tx.insertHashParameterSet(record)
                existing.append(record)
                ids.append(id)
            }
            return ids
        }
    }
}
