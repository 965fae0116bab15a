import Foundation
import Synchronization
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// Sealed parameter sets of Firebase scrypt and keyed HMAC hashes (`HashParameterStore`).
extension StoreConformanceTests {
    @Test("parameter sets round-trip in id order, and an id is taken once", arguments: Backend.all)
    func hashParameterStore(_ backend: Backend) throws {
        let db = try backend.database()
        #expect(try db.store.read { try $0.hashParameterSets() } == [])
        let first = HashParameterSetRecord(id: 2, kind: "hmac", sealed: [0, 1, 2, 255], createdAt: Self.now)
        let second = HashParameterSetRecord(id: 1, kind: "firebase-scrypt", sealed: [9], createdAt: Self.now + 1)
        try db.store.write { tx in
            try tx.insertHashParameterSet(first)
            try tx.insertHashParameterSet(second)
        }
        #expect(try db.store.read { try $0.hashParameterSets() } == [second, first])
        #expect(throws: StorageError.self) {
            try db.store.write { tx in try tx.insertHashParameterSet(first) }
        }
        #expect(throws: StorageError.self) {
            try db.store.write { tx in
                try tx.insertHashParameterSet(HashParameterSetRecord(id: 3, kind: "md5", sealed: [1], createdAt: 0))
            }
        }
        #expect(try db.store.read { try $0.hashParameterSets() }.count == 2)
    }

    @Test("adding sets stores each once, sealed, and the stored source opens them after a miss", arguments: Backend.all)
    func storedHashParameters(_ backend: Backend) throws {
        let db = try backend.database()
        let secrets = try SecretBox(key: Array(repeating: 3, count: 32))
        let sets = try HashParameterSet.parseFile(Array(KeyedHashFixtures.parametersFile(1, 3).utf8))
        let started = ContinuousClock.now
        let elapsed = Mutex(Duration.zero)
        let source = StoredHashParameters(
            store: db.store,
            secrets: secrets,
            clock: { started + elapsed.withLock { $0 } }
        )
        #expect(throws: PasswordHashError.self) { try source.hashParameterSet(id: 1, kind: .firebaseScrypt) }
        let ids = try StoredHashParameters.add(sets, store: db.store, secrets: secrets, now: Self.now)
        #expect(ids == [1, 2])
        #expect(
            try StoredHashParameters.add(sets.reversed(), store: db.store, secrets: secrets, now: Self.now) == [2, 1]
        )
        let stored = try db.store.read { try $0.hashParameterSets() }
        #expect(stored.map(\.kind) == ["firebase-scrypt", "hmac"])
        for (record, set) in zip(stored, sets) {
            for secret in KeyedHashTests.secrets(set) {
                #expect(!record.sealed.hexString.contains(Array(secret.utf8).hexString))
            }
        }
        // A second source made at once (a server running while an import adds sets) still finds them.
        let later = StoredHashParameters(
            store: db.store,
            secrets: secrets,
            clock: { ContinuousClock.now + .seconds(5) }
        )
        #expect(try later.hashParameterSet(id: 2, kind: .hmac) == sets[1])
        // The first source read the table a moment ago, before the sets were added: it reads again
        // on a miss only once a second has passed, so a hash naming a missing set is no flood of reads.
        elapsed.withLock { $0 = .milliseconds(500) }
        #expect(throws: PasswordHashError.self) { try source.hashParameterSet(id: 1, kind: .firebaseScrypt) }
        elapsed.withLock { $0 = .milliseconds(1500) }
        #expect(try source.hashParameterSet(id: 1, kind: .firebaseScrypt) == sets[0])
        // Many checks missing at once on a fresh source: the first reloads, the rest wait for it
        // and find the set rather than a missing one.
        let fresh = StoredHashParameters(store: db.store, secrets: secrets)
        let found = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 16) { _ in
            if (try? fresh.hashParameterSet(id: 2, kind: .hmac)) == sets[1] { found.withLock { $0 += 1 } }
        }
        #expect(found.withLock { $0 } == 16)
        // Another key: the same sets are stored again, and the old ones say why they are unusable.
        let other = try SecretBox(key: Array(repeating: 4, count: 32))
        #expect(try StoredHashParameters.add([sets[1]], store: db.store, secrets: other, now: Self.now) == [3])
        let error = #expect(throws: PasswordHashError.self) {
            try StoredHashParameters(store: db.store, secrets: other).hashParameterSet(id: 1, kind: .firebaseScrypt)
        }
        #expect(error?.code == .parametersUnavailable)
        #expect(error?.message.contains("does not open") == true)
    }
}
