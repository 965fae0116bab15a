import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Keeps a batch job (`transfer prepare` for one target team, `transfer complete`) to one run at a
/// time, across processes and hosts on one database: a row in `job_leases`, taken in a write
/// transaction, renewed by a heartbeat, deleted when the run ends. A run killed outright leaves
/// its row behind; it expires `timing.expiry` seconds after the last heartbeat, and the next run
/// takes it over. No advisory lock is involved, so any SQL database with transactions will do.
///
/// A holder that cannot renew in time (a stalled process, a database out of reach) loses the lease:
/// the heartbeat reports it through `onLost` and the caller stops its work, because another run
/// may already have taken the job over.
public final class JobLease: Sendable {
    /// How long a lease lives without a heartbeat, and how often the holder renews it.
    public struct Timing: Sendable, Equatable {
        /// Seconds after the last heartbeat at which the lease is free for the taking.
        public let expiry: Int64
        /// Milliseconds between heartbeats: a sixth of the expiry, so five can fail before it lapses.
        public var heartbeatMilliseconds: Int { Int(expiry * 1000 / 6) }

        public static let `default` = Timing(validExpiry: 30)

        /// Accepts 2...3600 seconds.
        public init?(expiry: Int64) {
            guard (2...3600).contains(expiry) else { return nil }
            self.init(validExpiry: expiry)
        }

        private init(validExpiry expiry: Int64) { self.expiry = expiry }
    }

    public let job: String
    public let holder: String
    public let acquiredAt: Int64
    public let timing: Timing
    private let token: String
    private let store: any UpgradeStore
    private let heartbeat: Mutex<Heartbeat?> = Mutex(nil)

    private struct Heartbeat: Sendable {
        let stop = DispatchSemaphore(value: 0)
        let stopped = DispatchSemaphore(value: 0)
    }

    private init(job: String, holder: String, token: String, acquiredAt: Int64, timing: Timing, store: any UpgradeStore)
    {
        self.job = job
        self.holder = holder
        self.token = token
        self.acquiredAt = acquiredAt
        self.timing = timing
        self.store = store
    }

    /// This process as a holder: host name, process id and a run id of its own, e.g.
    /// `batch-1.example.net pid 4242 run 9f3c01ab`.
    public static func localHolder() -> String {
        var name = [UInt8](repeating: 0, count: 256)
        let named = name.withUnsafeMutableBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { gethostname($0.baseAddress!, $0.count - 1) == 0 }
        }
        let host = named ? String(decoding: name.prefix { $0 != 0 }, as: UTF8.self) : "unknown-host"
        let run = SecureRandom.bytes(4).map { String($0, radix: 16).leftPadded(to: 2) }.joined()
        return "\(host) pid \(getpid()) run \(run)"
    }

    /// Takes the lease on `job`, free or expired by `now`, or throws `JobLeaseFailure.held` naming
    /// the run that holds it.
    public static func acquire(
        job: String,
        holder: String = localHolder(),
        store: any UpgradeStore,
        timing: Timing = .default,
        now: Int64
    ) throws(JobLeaseFailure) -> JobLease {
        let token = SecureRandom.token(byteCount: 16)
        let record = JobLeaseRecord(
            job: job,
            holder: holder,
            token: token,
            acquiredAt: now,
            heartbeatAt: now,
            expiresAt: now + timing.expiry
        )
        let current: JobLeaseRecord?
        do {
            current = try store.write { try $0.acquireJobLease(record, now: now) }
        } catch {
            throw JobLeaseFailure(.storage, "the lease on '\(job)' could not be taken: \(error)")
        }
        if var current {
            // The holder's token is its alone, not something a refused run carries around.
            current.token = ""
            throw JobLeaseFailure(
                .held(current),
                "'\(job)' is already running: \(current.holder) since \(Self.iso8601(current.acquiredAt)) (its lease lapses \(timing.expiry) s after the holder's last heartbeat)"
            )
        }
        return JobLease(job: job, holder: holder, token: token, acquiredAt: now, timing: timing, store: store)
    }

    /// Moves the expiry on to `now + timing.expiry`; false if this run no longer holds the lease.
    public func renew(now: Int64) throws -> Bool {
        try store.write {
            try $0.renewJobLease(job: job, token: token, heartbeatAt: now, expiresAt: now + timing.expiry)
        }
    }

    /// Renews the lease every `timing.heartbeatMilliseconds` on a thread of its own until
    /// `release()`. `onLost` is called once, from that thread, if the lease was taken over or could
    /// not be renewed before it lapsed; the heartbeat then stops.
    public func startHeartbeat(
        clock: @escaping @Sendable () -> Int64,
        onLost: @escaping @Sendable (String) -> Void
    ) {
        let beat = Heartbeat()
        let started = heartbeat.withLock { current in
            guard current == nil else { return false }
            current = beat
            return true
        }
        guard started else { return }
        let interval = timing.heartbeatMilliseconds
        // A thread of its own: the loop blocks between beats, which a shared queue's thread must not.
        Thread.detachNewThread { [self] in
            defer { beat.stopped.signal() }
            var validUntil = acquiredAt + timing.expiry
            while beat.stop.wait(timeout: .now() + .milliseconds(interval)) == .timedOut {
                let now = clock()
                do {
                    if try renew(now: now) {
                        validUntil = now + timing.expiry
                        continue
                    }
                    onLost("the lease on '\(job)' was taken over by another run after it lapsed; this run stops")
                    return
                } catch {
                    // A failed renewal is tried again at the next beat, while the lease still holds.
                    guard now + 1 >= validUntil else { continue }
                    onLost("the lease on '\(job)' could not be renewed before it lapsed (\(error)); this run stops")
                    return
                }
            }
        }
    }

    /// Stops the heartbeat and deletes the lease if this run still holds it. A failure to delete
    /// is left alone: the lease lapses by itself.
    public func release() {
        if let beat = heartbeat.withLock({ $0.take() }) {
            beat.stop.signal()
            beat.stopped.wait()
        }
        _ = try? store.write { try $0.releaseJobLease(job: job, token: token) }
    }

    static func iso8601(_ seconds: Int64) -> String {
        ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }
}

/// Why a job lease was not had. Nothing changed when one is thrown.
public struct JobLeaseFailure: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// Another run holds the job; its lease is attached.
        case held(JobLeaseRecord)
        /// The store failed.
        case storage
    }

    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String {
        count >= length ? self : String(repeating: "0", count: length - count) + self
    }
}
