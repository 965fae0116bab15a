/// The sealed parameter sets that Firebase scrypt and keyed HMAC hashes name by id
/// (`HashParameterSet`, docs/architecture.md, Password hashes). A set is written once and never
/// changed or deleted: a stored hash may name it.
public protocol HashParameterStore {
    /// Stores a new set. Its id is the caller's (one above the highest `hashParameterSets` read in the
    /// same transaction), since the sealing binds it; an id taken already throws.
    func insertHashParameterSet(_ record: HashParameterSetRecord) throws(StorageError)
    /// Every stored set, by id.
    func hashParameterSets() throws(StorageError) -> [HashParameterSetRecord]
}

/// One stored parameter set, still sealed: its secrets open only with the server's secret key
/// (context `HashParameterSet.sealingContext(id:)`).
public struct HashParameterSetRecord: Sendable, Equatable {
    public var id: Int64
    /// `HashParameterSet.Kind.rawValue`.
    public var kind: String
    public var sealed: [UInt8]
    public var createdAt: Int64

    public init(id: Int64, kind: String, sealed: [UInt8], createdAt: Int64) {
        self.id = id
        self.kind = kind
        self.sealed = sealed
        self.createdAt = createdAt
    }
}
