import Foundation
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// The lists the support console shows (`jobLeases`, `importRuns`, `pendingAppleRevocations`):
/// the same rows in the same order on every backend.
extension StoreConformanceTests {
    @Test("job leases by name, imports newest first, pending revocations soonest due first", arguments: Backend.all)
    func consoleLists(_ backend: Backend) throws {
        let db = try backend.database()
        try db.store.write { tx in
            for job in ["transfer prepare TEAMB", "transfer complete"] {
                let lease = JobLeaseRecord(
                    job: job,
                    holder: "h",
                    token: "t",
                    acquiredAt: Self.now,
                    heartbeatAt: Self.now,
                    expiresAt: Self.now + 30
                )
                #expect(try tx.acquireJobLease(lease, now: Self.now) == nil)
            }
            for (id, started) in [("imp-a", Self.now - 20), ("imp-c", Self.now), ("imp-b", Self.now - 10)] {
                try tx.upsertImportRun(
                    ImportRunRecord(id: id, source: "f.csv (csv)", lastLine: 1, startedAt: started, updatedAt: started)
                )
            }
            try tx.insertAppleRevocation(revocation("r-late", due: Self.now + 60))
            try tx.insertAppleRevocation(revocation("r-soon", due: Self.now - 5))
            try tx.insertAppleRevocation(revocation("r-done", due: Self.now - 10))
            #expect(try tx.finishAppleRevocation(id: "r-done", now: Self.now, note: nil))
        }
        try db.store.read { tx in
            #expect(try tx.jobLeases().map(\.job) == ["transfer complete", "transfer prepare TEAMB"])
            #expect(try tx.importRuns(limit: 2).map(\.id) == ["imp-c", "imp-b"])
            #expect(try tx.importRuns(limit: 10).map(\.id) == ["imp-c", "imp-b", "imp-a"])
            let pending = try tx.pendingAppleRevocations(limit: 10)
            #expect(pending.map(\.id) == ["r-soon", "r-late"])
            #expect(pending.first == revocation("r-soon", due: Self.now - 5))
            #expect(try tx.pendingAppleRevocations(limit: 1).map(\.id) == ["r-soon"])
        }
    }
}
