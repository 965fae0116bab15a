import Foundation
import Synchronization
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// `db migrate` run by several processes at once on one empty database, as several instances
/// starting together or two operators would: one applies each migration, the others wait for it and
/// find nothing left to do, and every one of them exits 0.
@Suite("upgrade-cli db migrate, several processes at once")
struct ConcurrentMigrationCLITests {
    @Test("three db migrate at once: every migration applied exactly once, all exit 0", arguments: Backend.all)
    func threeAtOnce(backend: Backend) throws {
        let db = try backend.database(migrated: false, forProcesses: true)
        let url = try #require(db.url)
        let results = Mutex<[(status: Int32, stdout: String, stderr: String)]>([])
        DispatchQueue.concurrentPerform(iterations: 3) { _ in
            let result =
                (try? runCLI(["db", "migrate"], environment: ["UPGRADE_DB": url])) ?? (-1, "", "could not start")
            results.withLock { $0.append(result) }
        }
        let all = results.withLock { $0 }
        #expect(all.count == 3)
        for result in all {
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.contains("schema is up to date"), "\(result.stdout)")
        }
        // Each migration is reported as applied by exactly one of the three.
        let applied = all.flatMap { $0.stdout.split(separator: "\n").filter { $0.hasPrefix("applied ") } }
        #expect(
            applied.sorted()
                == backend.migrations.map { "applied \(String(format: "%04d", $0.version)) \($0.name)" }.sorted()
        )
        let status = try db.store.migrationStatus()
        #expect(status.count == backend.migrations.count)
        #expect(status.allSatisfy { $0.appliedAt != nil })
    }
}
