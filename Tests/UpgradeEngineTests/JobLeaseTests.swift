import Dispatch
import Foundation
import Synchronization
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// Leases that keep a batch job to one run at a time: the store's methods on each backend, and
/// `JobLease` over them.
@Suite("Job leases")
struct JobLeaseTests {
    static let now: Int64 = 1_800_000_000

    static func lease(_ holder: String, token: String, at now: Int64, expiry: Int64 = 30) -> JobLeaseRecord {
        JobLeaseRecord(
            job: "transfer complete",
            holder: holder,
            token: token,
            acquiredAt: now,
            heartbeatAt: now,
            expiresAt: now + expiry
        )
    }

    @Test("acquire, refuse while live, renew and release by token only, take over once expired", arguments: Backend.all)
    func storeMethods(backend: Backend) throws {
        let database = try backend.database()
        let store = database.store
        let first = Self.lease("host-a pid 1 run aa", token: "token-a", at: Self.now)
        #expect(try store.write { try $0.acquireJobLease(first, now: Self.now) } == nil)
        #expect(try store.read { try $0.jobLease(job: "transfer complete") } == first)

        // A second run while the lease is live: refused, shown the holder, nothing changed.
        let second = Self.lease("host-b pid 2 run bb", token: "token-b", at: Self.now + 29)
        #expect(try store.write { try $0.acquireJobLease(second, now: Self.now + 29) } == first)
        #expect(
            try store.write {
                try $0.renewJobLease(
                    job: "transfer complete",
                    token: "token-b",
                    heartbeatAt: Self.now + 29,
                    expiresAt: Self.now + 59
                )
            } == false
        )
        #expect(try store.write { try $0.releaseJobLease(job: "transfer complete", token: "token-b") } == false)
        #expect(try store.read { try $0.jobLease(job: "transfer complete") } == first)
        // Another job is another lease.
        var other = second
        other.job = "transfer prepare TEAMB67890"
        #expect(try store.write { try $0.acquireJobLease(other, now: Self.now + 29) } == nil)

        // The holder's heartbeat moves the expiry on.
        #expect(
            try store.write {
                try $0.renewJobLease(
                    job: "transfer complete",
                    token: "token-a",
                    heartbeatAt: Self.now + 20,
                    expiresAt: Self.now + 50
                )
            }
        )
        #expect(try store.write { try $0.acquireJobLease(second, now: Self.now + 49) }?.expiresAt == Self.now + 50)

        // Expired: taken over, and the old holder can neither renew nor release it.
        let third = Self.lease("host-b pid 3 run cc", token: "token-c", at: Self.now + 50)
        #expect(try store.write { try $0.acquireJobLease(third, now: Self.now + 50) } == nil)
        #expect(try store.read { try $0.jobLease(job: "transfer complete") } == third)
        #expect(
            try store.write {
                try $0.renewJobLease(
                    job: "transfer complete",
                    token: "token-a",
                    heartbeatAt: Self.now + 51,
                    expiresAt: Self.now + 81
                )
            } == false
        )
        #expect(try store.write { try $0.releaseJobLease(job: "transfer complete", token: "token-a") } == false)
        #expect(try store.write { try $0.releaseJobLease(job: "transfer complete", token: "token-c") })
        #expect(try store.read { try $0.jobLease(job: "transfer complete") } == nil)
    }

    @Test("two runs acquiring at once from two stores: exactly one gets the lease", arguments: Backend.all)
    func concurrentAcquire(backend: Backend) throws {
        let database = try backend.database()
        let stores = [database.store, try database.reopen()]
        for round in 0..<5 {
            let now = Self.now + Int64(round) * 100
            let winners = ConcurrentErrors()
            DispatchQueue.concurrentPerform(iterations: 2) { index in
                do {
                    let lease = try JobLease.acquire(
                        job: "transfer complete",
                        holder: "run \(index)",
                        store: stores[index],
                        now: now
                    )
                    winners.add(lease.holder)
                } catch let error as JobLeaseFailure {
                    if case .held = error.kind { return }
                    winners.add("failed: \(error)")
                } catch {
                    winners.add("failed: \(error)")
                }
            }
            #expect(winners.all.count == 1, "round \(round): \(winners.all)")
            #expect(winners.all.allSatisfy { $0.hasPrefix("run ") }, "\(winners.all)")
        }
    }

    @Test("a refused run is told who holds the job and since when, never the holder's token", arguments: Backend.all)
    func refusalNamesHolder(backend: Backend) throws {
        let database = try backend.database()
        let holder = JobLease.localHolder()
        #expect(holder.contains(" pid \(getpid()) run "))
        let lease = try JobLease.acquire(job: "transfer complete", holder: holder, store: database.store, now: Self.now)
        let stored = try #require(try database.store.read { try $0.jobLease(job: "transfer complete") })
        #expect(!stored.token.isEmpty)
        #expect {
            _ = try JobLease.acquire(job: "transfer complete", store: database.store, now: Self.now + 5)
        } throws: { error in
            guard let failure = error as? JobLeaseFailure, case .held(let current) = failure.kind else { return false }
            return current.holder == holder && current.token.isEmpty && !failure.message.contains(stored.token)
                && failure.message
                    == "'transfer complete' is already running: \(holder) since 2027-01-15T08:00:00Z (its lease lapses 30 s after the holder's last heartbeat)"
        }
        lease.release()
        #expect(try database.store.read { try $0.jobLease(job: "transfer complete") } == nil)
        _ = try JobLease.acquire(job: "transfer complete", store: database.store, now: Self.now + 5)
    }

    @Test("a holder whose lease was taken over after it lapsed is told so by its heartbeat", arguments: Backend.all)
    func heartbeatNoticesTakeover(backend: Backend) throws {
        let database = try backend.database()
        let timing = try #require(JobLease.Timing(expiry: 2))
        let lease = try JobLease.acquire(job: "transfer complete", store: database.store, timing: timing, now: Self.now)
        // Another run takes the job over, as if this one had stalled past its expiry.
        let other = try JobLease.acquire(job: "transfer complete", store: try database.reopen(), now: Self.now + 2)
        let lost = DispatchSemaphore(value: 0)
        let message = ConcurrentErrors()
        lease.startHeartbeat(
            clock: { Self.now + 2 },
            onLost: { text in
                message.add(text)
                lost.signal()
            }
        )
        #expect(lost.wait(timeout: .now() + 10) == .success, "the next heartbeat finds the lease gone")
        #expect(
            message.all == [
                "the lease on 'transfer complete' was taken over by another run after it lapsed; this run stops"
            ]
        )
        lease.release()
        #expect(
            try database.store.read { try $0.jobLease(job: "transfer complete") }?.holder == other.holder,
            "the new holder keeps it"
        )
    }

    @Test("the heartbeat renews the lease until it is released", arguments: Backend.all)
    func heartbeatRenews(backend: Backend) throws {
        let database = try backend.database()
        let timing = try #require(JobLease.Timing(expiry: 2))
        let lease = try JobLease.acquire(job: "transfer complete", store: database.store, timing: timing, now: Self.now)
        let beats = DispatchSemaphore(value: 0)
        // The clock is read once per beat: each read is one heartbeat under way.
        lease.startHeartbeat(
            clock: {
                beats.signal()
                return Self.now + 60
            },
            onLost: { _ in }
        )
        #expect(beats.wait(timeout: .now() + 10) == .success)
        #expect(beats.wait(timeout: .now() + 10) == .success, "a second beat follows, so the first was committed")
        let renewed = try #require(try database.store.read { try $0.jobLease(job: "transfer complete") })
        #expect(renewed.heartbeatAt == Self.now + 60 && renewed.expiresAt == Self.now + 62)
        #expect(renewed.acquiredAt == Self.now)
        lease.release()
        #expect(try database.store.read { try $0.jobLease(job: "transfer complete") } == nil)
    }

    @Test("lease timing: 30 s by default with a heartbeat every 5 s; 2...3600 s accepted")
    func timing() {
        #expect(JobLease.Timing.default.expiry == 30)
        #expect(JobLease.Timing.default.heartbeatMilliseconds == 5000)
        #expect(JobLease.Timing(expiry: 1) == nil && JobLease.Timing(expiry: 3601) == nil)
        #expect(JobLease.Timing(expiry: 6)?.heartbeatMilliseconds == 1000)
    }
}

/// Errors collected from concurrent work, for one expectation after it.
final class ConcurrentErrors: Sendable {
    private let list = Mutex<[String]>([])
    func add(_ error: String) { list.withLock { $0.append(error) } }
    var all: [String] { list.withLock { $0 } }
}
