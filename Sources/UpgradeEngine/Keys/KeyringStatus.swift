/// Which keys the stored sealed values need, against the keys a keyring lists (`keys status`, the
/// start-up check of `serve`; docs/architecture.md §10.4). Built from one SQL count, so it is
/// cheap enough to run at every start and reload.
public struct KeyringStatus: Sendable, Equatable {
    /// The keyring's ids, newest first.
    public let listedKeyIDs: [String]
    /// Every stored value's count, by kind and key id.
    public let counts: [SealedValueCount]

    public init(listedKeyIDs: [String], counts: [SealedValueCount]) {
        self.listedKeyIDs = listedKeyIDs
        self.counts = counts.sorted { ($0.keyID, $0.kind) < ($1.keyID, $1.kind) }
    }

    /// Counts the store's sealed values (one read transaction) against `secrets`' keys.
    public static func load(store: any UpgradeStore, secrets: SecretBox) throws -> KeyringStatus {
        KeyringStatus(listedKeyIDs: secrets.keyIDs, counts: try store.read { try $0.sealedValueCounts() })
    }

    /// The id values not in a sealed format this build knows are counted under.
    public static let unreadableKeyID = "?"

    /// The key new values are sealed under.
    public var newestKeyID: String { listedKeyIDs.first ?? "" }

    /// Values per key id, over every kind.
    public func total(keyID: String) -> Int64 {
        counts.filter { $0.keyID == keyID }.reduce(0) { $0 + $1.count }
    }

    /// Values per kind, over every key.
    public func total(kind: SealedValueKind) -> Int64 {
        counts.filter { $0.kind == kind }.reduce(0) { $0 + $1.count }
    }

    /// The ids that seal some value, in order of first appearance in `counts` (by id).
    public var usedKeyIDs: [String] {
        var seen: [String] = []
        for count in counts where count.count > 0 && !seen.contains(count.keyID) { seen.append(count.keyID) }
        return seen
    }

    /// Listed keys, other than the newest, that seal no stored value: safe to remove once every
    /// instance seals under the newest.
    public var unusedKeyIDs: [String] {
        listedKeyIDs.dropFirst().filter { total(keyID: $0) == 0 }
    }

    /// Key ids some values need that the keyring does not list, with how many values need each.
    public var missingKeys: [(keyID: String, count: Int64)] {
        usedKeyIDs.filter { $0 != Self.unreadableKeyID && !listedKeyIDs.contains($0) }.map { ($0, total(keyID: $0)) }
    }

    /// Values (not under the newest key) that `keys reseal` would move to it.
    public var valuesNotUnderNewest: Int64 {
        counts.filter { $0.keyID != newestKeyID }.reduce(0) { $0 + $1.count }
    }

    /// One line refusing to start when a needed key is missing, nil when every needed key is listed.
    public var missingKeyProblem: String? {
        guard let first = missingKeys.first else { return nil }
        let others = missingKeys.dropFirst().map { "'\($0.keyID)' (\($0.count))" }
        let also = others.isEmpty ? "" : "; also missing: \(others.joined(separator: ", "))"
        return "\(SecretKeyFile.environmentVariable): key '\(first.keyID)' is needed by \(first.count) sealed value(s) "
            + "but is not in the keyring (listed: \(listedKeyIDs.joined(separator: ", ")))\(also); "
            + "add it back below the newest key, then run 'upgrade-cli keys reseal' before removing it"
    }

    public static func == (lhs: KeyringStatus, rhs: KeyringStatus) -> Bool {
        lhs.listedKeyIDs == rhs.listedKeyIDs && lhs.counts == rhs.counts
    }
}
