/// One stored sealed value, as `keys reseal` reads it.
public struct SealedValueRecord: Sendable, Equatable {
    public var kind: SealedValueKind
    /// The row's key: an account id, a revocation id, or a parameter set's id in decimal.
    public var key: String
    /// What the sealing context names: the account id (also for a revocation) or the set's id.
    public var owner: String
    public var sealed: [UInt8]

    public init(kind: SealedValueKind, key: String, owner: String, sealed: [UInt8]) {
        self.kind = kind
        self.key = key
        self.owner = owner
        self.sealed = sealed
    }
}
