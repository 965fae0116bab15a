import Foundation
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// The support console's sessions (`ConsoleSessionStore`): live ones found by key, expired ones
/// absent and purged a bounded number at a time, the oldest first.
extension StoreConformanceTests {
    func consoleSession(_ hash: String, expiresAt: Int64) -> ConsoleSessionRecord {
        ConsoleSessionRecord(
            hash: hash,
            tokenName: "support",
            tokenFingerprint: "fp-" + hash,
            createdAt: expiresAt - 900,
            expiresAt: expiresAt
        )
    }

    @Test("a console session is found while live, absent once expired, and deleted once", arguments: Backend.all)
    func consoleSessionLifetime(_ backend: Backend) throws {
        let db = try backend.database()
        let live = consoleSession("live", expiresAt: Self.now + 60)
        try db.store.write { tx throws in
            try tx.insertConsoleSession(live)
            try tx.insertConsoleSession(consoleSession("ending-now", expiresAt: Self.now))
        }
        try db.store.read { tx throws in
            #expect(try tx.consoleSession(hash: "live", now: Self.now) == live)
            #expect(try tx.consoleSession(hash: "live", now: Self.now + 60) == nil, "expired at its end")
            #expect(try tx.consoleSession(hash: "ending-now", now: Self.now) == nil)
            #expect(try tx.consoleSession(hash: "unknown", now: Self.now) == nil)
            #expect(try tx.liveConsoleSessionCount(now: Self.now) == 1)
            #expect(try tx.liveConsoleSessionCount(now: Self.now - 1) == 2)
        }
        try db.store.write { tx throws in
            #expect(try tx.deleteConsoleSession(hash: "live"))
            #expect(try !tx.deleteConsoleSession(hash: "live"))
        }
        #expect(try db.store.read { try $0.consoleSession(hash: "live", now: Self.now) } == nil)
    }

    @Test("expired console sessions are purged up to the limit, oldest first, live ones kept", arguments: Backend.all)
    func consoleSessionPurge(_ backend: Backend) throws {
        let db = try backend.database()
        try db.store.write { tx throws in
            for index in 0..<5 {
                try tx.insertConsoleSession(consoleSession("old-\(index)", expiresAt: Self.now - 5 + Int64(index)))
            }
            try tx.insertConsoleSession(consoleSession("live", expiresAt: Self.now + 1))
        }
        #expect(try db.store.write { try $0.deleteExpiredConsoleSessions(now: Self.now, limit: 3) } == 3)
        try db.store.read { tx throws in
            for index in 0..<3 { #expect(try tx.consoleSession(hash: "old-\(index)", now: 0) == nil, "old-\(index)") }
            for index in 3..<5 { #expect(try tx.consoleSession(hash: "old-\(index)", now: 0) != nil, "old-\(index)") }
        }
        #expect(try db.store.write { try $0.deleteExpiredConsoleSessions(now: Self.now, limit: 3) } == 2)
        #expect(try db.store.write { try $0.deleteExpiredConsoleSessions(now: Self.now, limit: 3) } == 0)
        #expect(try db.store.read { try $0.liveConsoleSessionCount(now: 0) } == 1)
    }
}
