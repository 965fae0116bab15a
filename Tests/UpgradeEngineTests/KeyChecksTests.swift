import Foundation
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// `KeyChecks`: a key id names one key for good (docs/architecture.md §10.4). The first keyring to
/// seal under a key records its check value; a keyring listing the id with other bytes is refused,
/// naming the id, and records nothing.
@Suite("Key checks")
struct KeyChecksTests {
    static let k1 = [UInt8](repeating: 0x11, count: 32)
    static let k2 = [UInt8](repeating: 0x22, count: 32)
    static let other = [UInt8](repeating: 0x33, count: 32)

    @Test("the newest key's check is recorded once; other bytes under a checked id are refused", arguments: Backend.all)
    func recordAndRefuse(_ backend: Backend) throws {
        let db = try backend.database()
        let first = try SecretBox(keys: [("k1", Self.k1)])
        #expect(try KeyChecks.verify(store: db.store, secrets: first, now: 1) == nil)
        let recorded = try db.store.read { try $0.keyChecks() }
        #expect(Array(recorded.keys) == ["k1"])
        #expect(recorded["k1"].map { !$0.contains(subsequence: Self.k1) } == true, "the check is sealed, not the key")
        #expect(try KeyChecks.verify(store: db.store, secrets: first, now: 2) == nil, "the same key again")
        #expect(try db.store.read { try $0.keyChecks() } == recorded, "recorded once")

        let impostor = try SecretBox(keys: [("k1", Self.other)])
        let problem = try #require(try KeyChecks.verify(store: db.store, secrets: impostor, now: 3))
        #expect(problem.contains("key 'k1' is not the key that id named"), "\(problem)")
        #expect(try KeyChecks.check(store: db.store, secrets: impostor) == problem)
        #expect(try KeyChecks.check(store: db.store, secrets: first) == nil)

        // A new newest key gets its check; the older one is still held to its own.
        let rotated = try SecretBox(keys: [("k2", Self.k2), ("k1", Self.k1)])
        #expect(try KeyChecks.verify(store: db.store, secrets: rotated, now: 4) == nil)
        #expect(Set(try db.store.read { try $0.keyChecks() }.keys) == ["k1", "k2"])
        let wrongNewest = try SecretBox(keys: [("k2", Self.other), ("k1", Self.k1)])
        let refused = try #require(try KeyChecks.verify(store: db.store, secrets: wrongNewest, now: 5))
        #expect(refused.contains("key 'k2'") && !refused.contains("'k1'"), "\(refused)")
        let both = try SecretBox(keys: [("k2", Self.other), ("k1", Self.other)])
        #expect(try KeyChecks.check(store: db.store, secrets: both)?.contains("key 'k2', 'k1'") == true)

        // A refused keyring records nothing: its own newest id stays unchecked.
        let refusedNewest = try SecretBox(keys: [("k3", Self.k2), ("k1", Self.other)])
        #expect(try KeyChecks.verify(store: db.store, secrets: refusedNewest, now: 6) != nil)
        #expect(try db.store.read { try $0.keyChecks() }["k3"] == nil)
    }

    @Test("a check recorded by another instance first is the one that counts", arguments: Backend.all)
    func firstWriterWins(_ backend: Backend) throws {
        let db = try backend.database()
        let mine = try SecretBox(keys: [("k1", Self.k1)])
        let theirs = try SecretBox(keys: [("k1", Self.other)])
        let sealed = try #require(theirs.seal(KeyChecks.plaintext, context: "key-check:k1", keyID: "k1"))
        #expect(try db.store.write { try $0.insertKeyCheck(keyID: "k1", sealed: sealed, now: 1) })
        let again = try #require(mine.seal(KeyChecks.plaintext, context: "key-check:k1", keyID: "k1"))
        #expect(try db.store.write { try $0.insertKeyCheck(keyID: "k1", sealed: again, now: 2) } == false)
        #expect(try KeyChecks.verify(store: db.store, secrets: mine, now: 3)?.contains("key 'k1'") == true)
        #expect(try KeyChecks.verify(store: db.store, secrets: theirs, now: 3) == nil)
        // A check moved to another id's row does not open there.
        try db.store.write { tx in
            let k2Check = try #require(theirs.seal(KeyChecks.plaintext, context: "key-check:k1", keyID: "k1"))
            _ = try tx.insertKeyCheck(keyID: "k2", sealed: k2Check, now: 4)
        }
        let listsK2 = try SecretBox(keys: [("k2", Self.other), ("k1", Self.other)])
        #expect(try KeyChecks.check(store: db.store, secrets: listsK2)?.contains("key 'k2'") == true)
    }
}

extension Array where Element == UInt8 {
    fileprivate func contains(subsequence: [UInt8]) -> Bool {
        guard subsequence.count <= count else { return false }
        return (0...(count - subsequence.count)).contains { Array(self[$0..<($0 + subsequence.count)]) == subsequence }
    }
}
