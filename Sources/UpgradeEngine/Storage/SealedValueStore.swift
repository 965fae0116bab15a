/// The values sealed with `SecretBox`, seen by the key that sealed them, for `keys status` and
/// `keys reseal` (docs/architecture.md §10.4). The key id is read off each stored value's
/// header in SQL, so counting decodes nothing in Swift.
public protocol SealedValueStore {
    /// How many values of each kind each key id sealed (`0` for format-version-1 values; `?` for a
    /// value whose header is not a sealed value's). Emptied values (revocations done) are not values.
    func sealedValueCounts() throws(StorageError) -> [SealedValueCount]
    /// Up to `limit` values of `kind` whose key id is not `keyID`, with a row key above `after` (nil:
    /// from the start), in row-key order, so a caller pages past values it could not reseal.
    func sealedValues(
        _ kind: SealedValueKind,
        notUnder keyID: String,
        after: String?,
        limit: Int
    ) throws(StorageError) -> [SealedValueRecord]
    /// Stores `replacement` as the value of row `key` only if the stored value is still `expected`
    /// (compare-and-set); false, changing nothing, if it changed or the row is gone. A row's version
    /// is left alone: the plaintext is the same, so no other writer's guard should fail over it.
    func replaceSealedValue(
        _ kind: SealedValueKind,
        key: String,
        expected: [UInt8],
        replacement: [UInt8]
    ) throws(StorageError) -> Bool
    /// The stored check value of each key id that has one (`KeyChecks`).
    func keyChecks() throws(StorageError) -> [String: [UInt8]]
    /// Stores `sealed` as the check value of `keyID` unless the id has one already; false, changing
    /// nothing, if it has (another instance recorded it first: read it back and open it).
    func insertKeyCheck(keyID: String, sealed: [UInt8], now: Int64) throws(StorageError) -> Bool
}

/// How many values of `kind` are sealed under `keyID`.
public struct SealedValueCount: Sendable, Equatable, Hashable {
    public var kind: SealedValueKind
    public var keyID: String
    public var count: Int64

    public init(kind: SealedValueKind, keyID: String, count: Int64) {
        self.kind = kind
        self.keyID = keyID
        self.count = count
    }
}
