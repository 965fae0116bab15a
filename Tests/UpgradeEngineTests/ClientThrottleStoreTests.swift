import Dispatch
import Foundation
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// The per-client throttle counted in the database: every server on one database sees one count
/// per client, on each backend.
@Suite("Client throttle in the store")
struct ClientThrottleStoreTests {
    static let now: Int64 = 1_800_000_000
    static let policy = ClientThrottle.Policy(failures: 4, window: 60)!

    @Test("failures split over two servers on one database reach the limit on both", arguments: Backend.all)
    func countedAcrossServers(backend: Backend) throws {
        let database = try backend.database()
        let first = ClientThrottle(policy: Self.policy, store: database.store)
        let second = ClientThrottle(policy: Self.policy, store: try database.reopen())
        let client = "192.0.2.7"
        for index in 0..<Self.policy.failures {
            let server = index.isMultiple(of: 2) ? first : second
            #expect(try server.retryAfter(clientKey: client, now: Self.now) == nil, "failure \(index) is allowed")
            try server.recordFailure(clientKey: client, now: Self.now)
        }
        // Each server alone saw half the failures; together they spent the burst.
        #expect(try first.retryAfter(clientKey: client, now: Self.now) == 15)
        #expect(try second.retryAfter(clientKey: client, now: Self.now) == 15)
        #expect(try first.retryAfter(clientKey: "192.0.2.8", now: Self.now) == nil)
        #expect(try second.clientsInDebt(now: Self.now) == 1)
        // One interval later either server allows exactly one more.
        #expect(try second.retryAfter(clientKey: client, now: Self.now + 15) == nil)
        try second.recordFailure(clientKey: client, now: Self.now + 15)
        #expect(try first.retryAfter(clientKey: client, now: Self.now + 15) == 15)
    }

    @Test("concurrent failures from two servers are each counted once", arguments: Backend.all)
    func concurrentFailures(backend: Backend) throws {
        let database = try backend.database()
        let throttles = [
            ClientThrottle(policy: Self.policy, store: database.store),
            ClientThrottle(policy: Self.policy, store: try database.reopen()),
        ]
        let failures = 16
        let errors = ConcurrentErrors()
        DispatchQueue.concurrentPerform(iterations: failures) { index in
            do {
                try throttles[index % 2].recordFailure(clientKey: "2001:db8:0:1::", now: Self.now)
            } catch {
                errors.add("\(error)")
            }
        }
        #expect(errors.all.isEmpty, "\(errors.all)")
        let paidOffAt = try database.store.read { try $0.clientThrottlePaidOffAt(clientKey: "2001:db8:0:1::") }
        #expect(paidOffAt == Self.now * 1000 + Int64(failures) * 15_000, "no failure lost to a race")
    }

    @Test("rows whose debt is paid are deleted as failures are counted", arguments: Backend.all)
    func paidRowsAreDeleted(backend: Backend) throws {
        let database = try backend.database()
        let throttle = ClientThrottle(policy: Self.policy, store: database.store)
        for index in 0..<5 {
            try throttle.recordFailure(clientKey: "198.51.100.\(index)", now: Self.now)
        }
        #expect(try database.store.read { try $0.clientsInDebt(now: Self.now * 1000) } == 5)
        // A failure after the others' debts are paid sweeps them.
        try throttle.recordFailure(clientKey: "203.0.113.1", now: Self.now + 15)
        let rows = try database.store.read { tx in
            try TestDatabase.raw(tx, "SELECT client_key FROM client_throttle").compactMap { $0.first?.string }
        }
        #expect(rows == ["203.0.113.1"])
    }

    @Test("store methods: absent is nil, set replaces, delete takes only paid rows", arguments: Backend.all)
    func storeMethods(backend: Backend) throws {
        let database = try backend.database()
        try database.store.write { tx in
            #expect(try tx.clientThrottlePaidOffAt(clientKey: "a") == nil)
            try tx.setClientThrottle(clientKey: "a", paidOffAt: 1000)
            try tx.setClientThrottle(clientKey: "a", paidOffAt: 3000)
            try tx.setClientThrottle(clientKey: "b", paidOffAt: 2000)
            #expect(try tx.clientThrottlePaidOffAt(clientKey: "a") == 3000)
            #expect(try tx.clientsInDebt(now: 1999) == 2)
            #expect(try tx.deletePaidClientThrottles(now: 2000) == 1)
            #expect(try tx.clientThrottlePaidOffAt(clientKey: "b") == nil)
            #expect(try tx.clientsInDebt(now: 2000) == 1)
        }
    }
}
