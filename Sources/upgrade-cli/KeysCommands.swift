import Foundation
import Synchronization
import UpgradeEngine

/// The keyring of `--secret-key-file FILE` or `UPGRADE_SECRET_KEY_FILE` (README, Configuration).
enum KeyringOption {
    static func load(_ arguments: inout ArgumentReader) throws -> SecretBox {
        if let path = try arguments.option("--secret-key-file") {
            do {
                return try SecretKeyFile.load(path: path)
            } catch {
                // The option was fine; the file is a configuration problem (one line, no usage text).
                throw CommandFailure.configuration("--secret-key-file: \(error.message)")
            }
        }
        do {
            return try SecretKeyFile.load(environment: ProcessInfo.processInfo.environment)
        } catch {
            throw CommandFailure.configuration("\(error.message) (or pass --secret-key-file FILE)")
        }
    }
}

/// `keys status`: how many sealed values each key seals, by kind; which listed keys are unused and
/// which needed keys are missing; which keyrings the running `serve` instances hold. Exit 1 when a
/// needed key is missing, a value is unreadable, a check value does not open or a running instance
/// cannot open the newest key.
struct KeysStatusCommand: CLICommand {
    static let path = ["keys", "status"]
    static let summary =
        "count sealed values per key id; say which keys are unused or missing and which keyrings running servers hold"
    static let usage = "upgrade-cli keys status [--secret-key-file FILE] [--db URL]"

    static func run(_ arguments: inout ArgumentReader) throws -> Int32 {
        let location = try StoreOption.location(&arguments)
        let secrets = try KeyringOption.load(&arguments)
        try arguments.finish()
        let store = try StoreOption.openMigrated(location)
        let status = try KeyringStatus.load(store: store, secrets: secrets)
        for line in lines(status) { Console.out(line) }
        let now = Clock.nowSeconds
        let running = try RunningKeyrings.live(store: store, now: now)
        for line in lines(running, newest: secrets.newestKeyID, now: now) { Console.out(line) }
        let mismatch = try KeyChecks.check(store: store, secrets: secrets)
        if let mismatch { Console.out("MISMATCH: \(mismatch)") }
        let unreadable = status.total(keyID: KeyringStatus.unreadableKeyID)
        let behind = RunningKeyrings.lacking(secrets.newestKeyID, in: running)
        return status.missingKeys.isEmpty && unreadable == 0 && mismatch == nil && behind.isEmpty
            ? ExitCode.success : ExitCode.failure
    }

    /// The running `serve` instances and whether each can open values under `newest`.
    static func lines(_ running: [ServeInstanceRecord], newest: String, now: Int64) -> [String] {
        guard !running.isEmpty else {
            return ["serve instances (seen in the last \(RunningKeyrings.liveSeconds) s): none"]
        }
        var lines = ["serve instances (seen in the last \(RunningKeyrings.liveSeconds) s): \(running.count)"]
        for instance in running {
            var line = "serve instance \(RunningKeyrings.describe(instance, now: now))"
            if !instance.keyIDs.contains(newest) {
                line += ": CANNOT OPEN key \(newest); reload it with this keyring (kill -HUP) before keys reseal"
            } else if let sealing = instance.keyIDs.first, sealing != newest {
                line += ": seals under key \(sealing), not \(newest)"
            }
            lines.append(line)
        }
        return lines
    }

    static func lines(_ status: KeyringStatus) -> [String] {
        var lines = ["keyring (newest first): \(status.listedKeyIDs.joined(separator: ", "))"]
        var ids = status.listedKeyIDs
        ids += status.usedKeyIDs.filter { !ids.contains($0) }
        for id in ids {
            let total = status.total(keyID: id)
            var label = "key \(id)"
            if id == KeyringStatus.unreadableKeyID {
                label = "not a sealed value this build reads"
            } else if id == status.newestKeyID {
                label += " (newest)"
            } else if !status.listedKeyIDs.contains(id) {
                label += " (MISSING from the keyring)"
            }
            let kinds = status.counts.filter { $0.keyID == id }.map { "\($0.kind.rawValue) \($0.count)" }
            lines.append("\(label): \(total) value(s)\(kinds.isEmpty ? "" : ": " + kinds.joined(separator: ", "))")
        }
        let kinds = SealedValueKind.allCases.map { "\($0.rawValue) \(status.total(kind: $0))" }
        lines.append("by kind: \(kinds.joined(separator: ", "))")
        let unused = status.unusedKeyIDs
        lines.append(
            unused.isEmpty
                ? "unused keys: none"
                : "unused keys (no value needs them; safe to remove): \(unused.joined(separator: ", "))"
        )
        let missing = status.missingKeys
        lines.append(
            missing.isEmpty
                ? "missing keys: none"
                : "missing keys (values need them; add them back): "
                    + missing.map { "\($0.keyID) (\($0.count) value(s))" }.joined(separator: ", ")
        )
        if status.valuesNotUnderNewest > 0 && missing.isEmpty {
            lines.append(
                "\(status.valuesNotUnderNewest) value(s) are not under the newest key; run 'upgrade-cli keys reseal'"
            )
        }
        return lines
    }
}

/// `keys reseal`: re-seals every value under the newest key, in batches of one transaction each,
/// under a job lease; resumable after a crash (README, Rotating the sealing key).
struct KeysResealCommand: CLICommand {
    static let path = ["keys", "reseal"]
    static let summary = "re-seal every sealed value under the newest key (resumable, one run at a time)"
    static let usage = "upgrade-cli keys reseal [--batch N] [--secret-key-file FILE] [--db URL]"
    static let job = "keys reseal"

    static func run(_ arguments: inout ArgumentReader) throws -> Int32 {
        let location = try StoreOption.location(&arguments)
        let batchSize = try arguments.intOption("--batch") ?? 500
        let secrets = try KeyringOption.load(&arguments)
        try arguments.finish()
        guard (1...10_000).contains(batchSize) else { throw UsageError("--batch must be between 1 and 10000") }
        let environment = ProcessInfo.processInfo.environment
        let store = try StoreOption.openMigrated(location, batch: true)

        let lease: JobLease
        do {
            lease = try JobLease.acquire(
                job: job,
                store: store,
                timing: try TransferBatchCommand.leaseTiming(environment),
                now: Clock.nowSeconds
            )
        } catch let error as JobLeaseFailure {
            throw CommandFailure.configuration(error.message)
        }
        defer { lease.release() }
        let lost = StopFlag()
        lease.startHeartbeat(
            clock: { Clock.nowSeconds },
            onLost: { message in
                Console.err("error: \(message)")
                lost.set()
            }
        )

        let newest = secrets.newestKeyID
        // A value moved under a key that a running instance's keyring lacks is out of that
        // instance's reach (docs/architecture.md §10.4, "Which keyrings are running").
        // Checked before anything is moved, and again before each batch: an instance started
        // meanwhile with an older keyring stops the run after at most one batch.
        func lagging() throws -> String? {
            let now = Clock.nowSeconds
            return RunningKeyrings.resealProblem(
                keyID: newest,
                instances: try RunningKeyrings.live(store: store, now: now),
                now: now
            )
        }
        if let problem = try lagging() { throw CommandFailure.configuration(problem) }
        Console.out("re-sealing under key \(newest) in batches of \(batchSize)")
        let summary: SealedValueResealer.Summary
        do {
            summary = try SealedValueResealer(store: store, secrets: secrets, batchSize: batchSize).run(
                onBatch: { Console.out("\($0.kind.rawValue): \($0.resealed) of \($0.total) re-sealed") },
                shouldStop: { lost.isSet },
                blocker: lagging
            )
        } catch let refused as KeyCheckFailure {
            throw CommandFailure.configuration(refused.message)
        } catch {
            throw CommandFailure("the reseal stopped: \(error); committed batches stay, run it again to resume")
        }
        if let blocked = summary.blocked {
            throw CommandFailure.configuration(
                "the reseal stopped after \(summary.totalResealed) value(s): \(blocked)"
            )
        }
        if summary.stopped { throw CommandFailure("the reseal stopped; run it again to resume") }
        for failure in summary.failures {
            Console.err("error: \(failure.kind.rawValue) \(failure.key): \(failure.reason)")
        }
        var line = "re-sealed \(summary.totalResealed) value(s) under key \(newest)"
        if summary.changedMeanwhile > 0 {
            line += "; \(summary.changedMeanwhile) changed meanwhile and were left as they were (run it again)"
        }
        if !summary.failures.isEmpty { line += "; \(summary.failures.count) could not be opened (listed above)" }
        Console.out(line)

        let after = try KeyringStatus.load(store: store, secrets: secrets)
        let unused = after.unusedKeyIDs
        if after.valuesNotUnderNewest == 0 {
            Console.out(
                unused.isEmpty
                    ? "every sealed value is under key \(newest)"
                    : "every sealed value is under key \(newest); no longer used, safe to remove from the keyring: "
                        + unused.joined(separator: ", ")
            )
        } else {
            let still = after.usedKeyIDs.filter { $0 != newest }
            Console.out(
                "\(after.valuesNotUnderNewest) value(s) remain under other keys (\(still.joined(separator: ", "))); "
                    + "keep those keys listed"
                    + (unused.isEmpty ? "" : "; no longer used, safe to remove: \(unused.joined(separator: ", "))")
            )
        }
        return summary.failures.isEmpty && summary.changedMeanwhile == 0 ? ExitCode.success : ExitCode.failure
    }
}

/// Set once by the lease's heartbeat thread, read between batches.
private final class StopFlag: Sendable {
    private let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}
