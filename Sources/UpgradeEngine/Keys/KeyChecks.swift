/// One check value per sealing key id (`key_checks`; docs/architecture.md §10.4). A key id names one
/// key for good, but nothing in a keyring file says which: two hosts can list `k2` with different
/// key bytes, and then each opens only what it sealed itself. So the first server (or `keys
/// reseal`) that seals under a key records a constant sealed under it, and every keyring after that
/// must open each check of an id it lists: a keyring that cannot is refused before it seals
/// anything, with the id named and never a key.
public enum KeyChecks {
    /// What a check value seals; its context binds it to the id.
    static let plaintext = Array("siwa-upgrade key check v1".utf8)

    static func context(keyID: String) -> String { "key-check:\(keyID)" }

    /// The ids `secrets` lists whose stored check it cannot open, in keyring order.
    static func mismatched(_ checks: [String: [UInt8]], secrets: SecretBox) -> [String] {
        secrets.keyIDs.filter { id in
            guard let sealed = checks[id] else { return false }
            guard SecretBox.keyID(of: sealed) == id,
                let opened = try? secrets.open(sealed, context: context(keyID: id))
            else { return true }
            return !ConstantTime.equals(opened, plaintext)
        }
    }

    /// One line refusing `secrets`, naming the ids whose check in `checks` it cannot open; nil when
    /// it opens all.
    static func problem(_ checks: [String: [UInt8]], secrets: SecretBox) -> String? {
        let mismatched = mismatched(checks, secrets: secrets)
        guard !mismatched.isEmpty else { return nil }
        let ids = mismatched.map { "'\($0)'" }.joined(separator: ", ")
        return "\(SecretKeyFile.environmentVariable): key \(ids) is not the key that id named when values were "
            + "first sealed under it (its check value does not open): a key id names one key for good; list the "
            + "original key under that id, and give a new key a new id"
    }

    /// Checks every listed key that has a check value, then records the newest key's if it has
    /// none, in one write transaction; the problem line, or nil. Nothing is recorded for a keyring
    /// that is refused.
    public static func verify(store: any UpgradeStore, secrets: SecretBox, now: Int64) throws -> String? {
        try store.write { tx in
            var checks = try tx.keyChecks()
            if let problem = problem(checks, secrets: secrets) { return problem }
            let newest = secrets.newestKeyID
            guard checks[newest] == nil,
                let sealed = secrets.seal(plaintext, context: context(keyID: newest), keyID: newest)
            else { return nil }
            if try !tx.insertKeyCheck(keyID: newest, sealed: sealed, now: now) {
                // Another instance recorded it meanwhile: its check must open with this keyring too.
                checks = try tx.keyChecks()
                return problem(checks, secrets: secrets)
            }
            return nil
        }
    }

    /// The same check without recording anything (`keys status`).
    public static func check(store: any UpgradeStore, secrets: SecretBox) throws -> String? {
        problem(try store.read { try $0.keyChecks() }, secrets: secrets)
    }
}

/// A keyring refused by `KeyChecks` (`keys reseal`): the problem line, naming ids, never a key.
public struct KeyCheckFailure: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
