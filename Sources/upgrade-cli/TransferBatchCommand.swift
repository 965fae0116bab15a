import Dispatch
import Foundation
import Synchronization
import UpgradeAPI
import UpgradeEngine

/// What `transfer prepare` and `transfer complete` share: the batch options, the `--report` file,
/// progress, the summary and the exit code (README, Command line: 0 all rows fine, 1 some rows failed, 2 usage
/// or configuration error).
enum TransferBatchCommand {
    struct Options {
        var dryRun: Bool
        var concurrency: Int
        var limit: Int?
        var reportPath: String?
    }

    static let batchUsage =
        "[--client-id ID] [--dry-run] [--concurrency N] [--limit N] [--report FILE] [--db URL]"

    /// What a batch runs on: the transfer service over the migrated store and the Apple client, how
    /// many rows it will visit (the Apple-linked accounts), for the progress line, and the lease timing.
    struct Batch {
        var service: TransferService
        var store: any UpgradeStore
        var expectedRows: Int
        var leaseTiming: JobLease.Timing
    }

    static func batch(
        _ configuration: TransferCommandConfiguration,
        location: DatabaseLocation,
        now: Int64
    ) throws -> Batch {
        let leaseTiming = try leaseTiming(ProcessInfo.processInfo.environment)
        let store = try StoreOption.openMigrated(location, batch: true)
        let service = TransferService(
            store: store,
            apple: try makeAppleMigrationClient(configuration),
            configuration: TransferServiceConfiguration(teamID: configuration.teamID)
        )
        do {
            return Batch(
                service: service,
                store: store,
                expectedRows: try service.status(now: now).linkedAccounts,
                leaseTiming: leaseTiming
            )
        } catch {
            throw CommandFailure(error.message)
        }
    }

    /// `UPGRADE_JOB_LEASE_SECONDS`: how long a batch's lease outlives its last heartbeat (README,
    /// Operations); the default suits production, a short one lets a test see a lease lapse.
    static func leaseTiming(_ environment: [String: String]) throws -> JobLease.Timing {
        guard let text = ServerSettings.setting("UPGRADE_JOB_LEASE_SECONDS", in: environment) else { return .default }
        guard let seconds = Int64(text), let timing = JobLease.Timing(expiry: seconds) else {
            throw CommandFailure.configuration("UPGRADE_JOB_LEASE_SECONDS must be a number of seconds from 2 to 3600")
        }
        return timing
    }

    static func readOptions(_ arguments: inout ArgumentReader) throws -> Options {
        let options = Options(
            dryRun: arguments.flag("--dry-run"),
            concurrency: try arguments.intOption("--concurrency") ?? 4,
            limit: try arguments.intOption("--limit"),
            reportPath: try arguments.option("--report")
        )
        guard TransferBatchOptions.concurrencyRange.contains(options.concurrency) else {
            throw UsageError("--concurrency must be between 1 and 64")
        }
        if let limit = options.limit, limit < 1 { throw UsageError("--limit must be at least 1") }
        if options.reportPath?.isEmpty == true { throw UsageError("--report needs a file name") }
        return options
    }

    /// `--accepted-at`: Unix seconds, an ISO 8601 date-time with its offset, or a date (UTC midnight).
    static func acceptedAt(_ text: String, now: Int64) throws -> Int64 {
        let seconds: Int64
        if let unix = Int64(text) {
            seconds = unix
        } else {
            let formatter = ISO8601DateFormatter()
            var parsed = formatter.date(from: text)
            if parsed == nil {
                formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
                parsed = formatter.date(from: text)
            }
            if parsed == nil {
                formatter.formatOptions = [.withFullDate]
                parsed = formatter.date(from: text)
            }
            guard let date = parsed else {
                throw UsageError(
                    "--accepted-at must be Unix seconds or ISO 8601 (2025-06-01T12:00:00Z or 2025-06-01), got '\(text)'"
                )
            }
            seconds = Int64(date.timeIntervalSince1970)
        }
        guard seconds > 0 else { throw UsageError("--accepted-at must be after 1970") }
        guard seconds <= now + 300 else {
            throw UsageError("--accepted-at is in the future; give the time the transfer was accepted")
        }
        return seconds
    }

    static func iso8601(_ seconds: Int64) -> String {
        ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }

    /// Runs a batch with a report file and progress output, prints the summary and returns the exit code.
    ///
    /// A batch that writes holds the lease on `job` while it runs, so a second run of the same job
    /// is refused (exit 2, naming the run that holds it and since when) instead of racing it for
    /// every row. A dry run writes nothing, so it takes no lease and may run beside a real one.
    /// `announce` prints what the batch is about to do, once it may.
    static func run(
        _ options: Options,
        job: String,
        on target: Batch,
        announce: () -> Void,
        batch: @escaping @Sendable (TransferBatchOptions) async throws(TransferFailure) -> TransferBatchSummary
    ) throws -> Int32 {
        var lease: JobLease?
        if !options.dryRun {
            do {
                lease = try JobLease.acquire(
                    job: job,
                    store: target.store,
                    timing: target.leaseTiming,
                    now: Clock.nowSeconds
                )
            } catch {
                throw CommandFailure.configuration(error.message)
            }
        }
        // Released however the batch ends: finished, failed, interrupted by a first signal.
        defer { lease?.release() }
        announce()
        let output = try TransferCommandOutput(reportPath: options.reportPath, expectedRows: target.expectedRows)
        let batchOptions = TransferBatchOptions(
            dryRun: options.dryRun,
            concurrency: options.concurrency,
            limit: options.limit,
            onRow: { output.row($0) },
            clock: { Clock.nowSeconds }
        )
        let result = runInterruptible(lease: lease) { () async -> Result<TransferBatchSummary, TransferFailure> in
            do throws(TransferFailure) {
                return .success(try await batch(batchOptions))
            } catch {
                return .failure(error)
            }
        }
        output.finish()
        let summary: TransferBatchSummary
        switch result {
        case .success(let value): summary = value
        case .failure(let failure):
            throw failure.code == .validation ? UsageError(failure.message) : CommandFailure(failure.message)
        }
        Console.out(summary.line)
        if let path = options.reportPath { Console.out("report: \(path) (\(summary.rows) rows)") }
        if summary.rows > 0 && summary.skipReasons["other-team"] == summary.rows {
            Console.out(
                "hint: every account visited is linked under another team than APPLE_TEAM_ID; 'transfer prepare' runs with the sender team's credentials"
            )
        }
        if let stranded = summary.skipReasons["stranded"] {
            Console.out(
                "hint: \(stranded) account\(stranded == 1 ? " was" : "s were") never migrated by the transfer that brought the app to the team now moving it on: \(stranded == 1 ? "it keeps" : "they keep") the earlier team's id, which no later transfer can move"
            )
        }
        if let incomplete = summary.skipReasons["earlier-transfer-incomplete"] {
            Console.out(
                "hint: \(incomplete) account\(incomplete == 1 ? " was" : "s were") not yet migrated by the transfer that brought the app to this team, whose window is still open: run 'transfer complete' for \(incomplete == 1 ? "it" : "them") before it closes ('transfer status' says when), or \(incomplete == 1 ? "it stays" : "they stay") with the earlier team's id"
            )
        }
        if let open = summary.skipReasons["earlier-window-open"] {
            Console.out(
                "hint: \(open) account\(open == 1 ? " was" : "s were") migrated by a transfer whose 60-day window is still open; run 'transfer prepare' again once it has closed\(summary.retryAfter.map { ", after \(RFC3339.utc(seconds: $0))" } ?? "")"
            )
        }
        if let held = summary.reasons["ids-held"] {
            Console.out(
                "hint: \(held) account\(held == 1 ? " needs" : "s need") Apple ids that another account's transfer record still holds: the same Apple user is linked to both (the report's heldBy); nothing was written for \(held == 1 ? "it" : "them"). Decide which account keeps the user ('accounts show' on both), then re-run"
            )
        }
        if summary.outcomes[.notPrepared, default: 0] > 0 {
            Console.out(
                "hint: accounts without a transfer identifier need 'upgrade-cli transfer prepare' with the sender team's credentials while the window is open"
            )
        }
        if let stop = summary.stop { Console.err("error: \(stop.message)") }
        return summary.exitStatus
    }

    /// Runs `body` to completion from the synchronous command. The first SIGINT or SIGTERM cancels
    /// it: rows in flight finish and are committed, no new row starts, and the summary is printed;
    /// a second signal ends the process at once (its lease then lapses by itself). Either way
    /// committed rows stay committed. Losing `lease` cancels the batch as a signal would.
    private static func runInterruptible<T: Sendable>(
        lease: JobLease?,
        _ body: @escaping @Sendable () async -> T
    ) -> T {
        let result = Mutex<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        let task = Task {
            let value = await body()
            result.withLock { $0 = value }
            done.signal()
        }
        lease?.startHeartbeat(
            clock: { Clock.nowSeconds },
            onLost: { message in
                Console.err("error: \(message)")
                task.cancel()
            }
        )
        var sources: [any DispatchSourceSignal] = []
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                Console.err("interrupted: finishing the rows in flight (signal again to stop at once)")
                signal(number, SIG_DFL)
                task.cancel()
            }
            source.resume()
            sources.append(source)
        }
        done.wait()
        for source in sources { source.cancel() }
        return result.withLock { $0! }
    }
}
