/// Where `PasswordVerifier` finds the `HashParameterSet` a Firebase scrypt or keyed HMAC hash names.
///
/// Throws `.parametersUnavailable` when the set is not there, with a message that names the set's
/// id and never a secret. `StoredHashParameters` reads the database; `HashParameterSets` holds sets
/// in memory (a parameters file, tests).
public protocol HashParameterSource: Sendable {
    /// The stored set `id`, or for a hash in import form (`id` nil, no `p=`) the set of `kind` given
    /// with it.
    func hashParameterSet(id: Int64?, kind: HashParameterSet.Kind) throws(PasswordHashError) -> HashParameterSet
}

/// Parameter sets held in memory: `given` resolves hashes in import form (a `--hash-parameters`
/// file for `password verify`), `stored` hashes that name an id.
public struct HashParameterSets: HashParameterSource {
    public var given: [HashParameterSet.Kind: HashParameterSet]
    public var stored: [Int64: HashParameterSet]
    /// Stored sets that did not open, and why.
    public var unusable: [Int64: PasswordHashError] = [:]

    public init(given: [HashParameterSet] = [], stored: [Int64: HashParameterSet] = [:]) {
        self.given = Dictionary(given.map { ($0.kind, $0) }, uniquingKeysWith: { first, _ in first })
        self.stored = stored
    }

    /// Every stored set, opened with `secrets` (read once, e.g. before `StoredHashCheck`, which
    /// must not read the database again inside its transaction).
    public init(records: [HashParameterSetRecord], secrets: SecretBox) {
        self.init()
        for record in records {
            do {
                stored[record.id] = try HashParameterSet.open(record, with: secrets)
            } catch {
                unusable[record.id] = error
            }
        }
    }

    public func hashParameterSet(
        id: Int64?,
        kind: HashParameterSet.Kind
    ) throws(PasswordHashError)
        -> HashParameterSet
    {
        if let id {
            if let error = unusable[id] { throw error }
            guard let set = stored[id] else { throw Self.notStored(id) }
            return set
        }
        guard let set = given[kind] else {
            throw PasswordHashError(
                .parametersUnavailable,
                "the hash names no parameter set (p=<id>) and no \(kind.rawValue) parameters were given "
                    + "(--hash-parameters)"
            )
        }
        return set
    }

    static func notStored(_ id: Int64) -> PasswordHashError {
        PasswordHashError(
            .parametersUnavailable,
            "hash parameter set \(id) is not stored; store the parameters with 'upgrade-cli accounts import "
                + "--hash-parameters' or 'upgrade-cli hash-parameters add'"
        )
    }
}
