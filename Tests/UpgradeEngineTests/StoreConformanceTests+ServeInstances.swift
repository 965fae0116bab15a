import Foundation
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// The running `serve` instances (`ServeInstanceStore`): a row written again keeps where and when
/// it started and takes the new keyring and time; rows are found by when they were last seen,
/// deleted once, and forgotten when not seen for long.
extension StoreConformanceTests {
    func serveInstance(_ id: String, keys: [String], seenAt: Int64) -> ServeInstanceRecord {
        ServeInstanceRecord(
            id: id,
            host: "host-\(id)",
            pid: 4242,
            listen: "127.0.0.1:8080",
            keyIDs: keys,
            startedAt: Self.now - 100,
            seenAt: seenAt
        )
    }

    @Test("a serve instance's row: written again it takes the new keyring and time, kept start", arguments: Backend.all)
    func serveInstanceHeartbeat(_ backend: Backend) throws {
        let db = try backend.database()
        try db.store.write { tx throws in
            try tx.recordServeInstance(serveInstance("a", keys: ["k1"], seenAt: Self.now - 50))
            try tx.recordServeInstance(serveInstance("b", keys: ["k2", "k1"], seenAt: Self.now - 10))
        }
        var reloaded = serveInstance("a", keys: ["k2", "k1", "k-0_old"], seenAt: Self.now)
        reloaded.startedAt = Self.now
        reloaded.listen = "127.0.0.1:9090"
        try db.store.write { try $0.recordServeInstance(reloaded) }
        try db.store.read { tx throws in
            let all = try tx.serveInstances(seenSince: 0)
            #expect(all.map(\.id) == ["a", "b"])
            #expect(all[0].keyIDs == ["k2", "k1", "k-0_old"] && all[0].seenAt == Self.now)
            #expect(all[0].listen == "127.0.0.1:9090" && all[0].host == "host-a" && all[0].pid == 4242)
            #expect(all[0].startedAt == Self.now - 100, "the first write's start stays")
            #expect(all[1] == serveInstance("b", keys: ["k2", "k1"], seenAt: Self.now - 10))
            let atBound = try tx.serveInstances(seenSince: Self.now - 10)
            #expect(atBound.map(\.id) == ["a", "b"], "seen at the bound counts")
            #expect(try tx.serveInstances(seenSince: Self.now - 9).map(\.id) == ["a"])
        }
        try db.store.write { tx throws in
            #expect(try tx.removeServeInstance(id: "a"))
            #expect(try !tx.removeServeInstance(id: "a"))
        }
        #expect(try db.store.read { try $0.serveInstances(seenSince: 0) }.map(\.id) == ["b"])
    }

    @Test("serve instances not seen since a time are forgotten; the others stay", arguments: Backend.all)
    func serveInstanceForget(_ backend: Backend) throws {
        let db = try backend.database()
        try db.store.write { tx throws in
            for (index, age) in [90_000, 86_401, 86_400, 5].enumerated() {
                try tx.recordServeInstance(serveInstance("i\(index)", keys: ["k1"], seenAt: Self.now - Int64(age)))
            }
        }
        #expect(try db.store.write { try $0.forgetServeInstances(seenBefore: Self.now - 86_400) } == 2)
        #expect(try db.store.read { try $0.serveInstances(seenSince: 0) }.map(\.id) == ["i2", "i3"])
        #expect(try db.store.write { try $0.forgetServeInstances(seenBefore: Self.now - 86_400) } == 0)
    }
}
