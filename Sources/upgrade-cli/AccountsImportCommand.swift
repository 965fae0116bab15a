import Foundation
import UpgradeAPI
import UpgradeEngine

#if canImport(Glibc)
import Glibc
#endif

/// `accounts import FILE`: JSON Lines or CSV, streamed in batched, resumable transactions
/// (README, Importing accounts). Exit 0 every row fine, 1 some rows refused, 2 usage,
/// configuration or unreadable input.
struct AccountsImportCommand: CLICommand {
    static let path = ["accounts", "import"]
    static let summary = "import accounts from JSON Lines or CSV (resumable; - reads stdin)"
    static let usage =
        "upgrade-cli accounts import FILE|- [--format jsonl|csv] [--on-conflict skip|update] [--dry-run] "
        + "[--report FILE] [--batch-size N] [--concurrency N] [--team-id ID] [--client-id ID] [--hash-parameters FILE] [--dev] [--db URL]"

    static func run(_ arguments: inout ArgumentReader) throws -> Int32 {
        let dev = arguments.flag("--dev")
        let location = try StoreOption.location(&arguments, dev: dev)
        let formatText = try arguments.option("--format")
        let conflictText = try arguments.option("--on-conflict") ?? ImportConflictPolicy.skip.rawValue
        let dryRun = arguments.flag("--dry-run")
        let reportPath = try arguments.option("--report")
        let batchSize = try arguments.intOption("--batch-size") ?? 1000
        let concurrency = try arguments.intOption("--concurrency") ?? 1
        let teamOption = try arguments.option("--team-id")
        let clientOption = try arguments.option("--client-id")
        let parametersPath = try arguments.option("--hash-parameters")
        let path = try arguments.positional("FILE (or - for standard input)")
        try arguments.finish()

        guard let onConflict = ImportConflictPolicy(rawValue: conflictText) else {
            throw UsageError("--on-conflict must be skip or update, got '\(conflictText)'")
        }
        guard (1...10_000).contains(batchSize) else { throw UsageError("--batch-size must be between 1 and 10000") }
        guard AccountImportOptions.concurrencyRange.contains(concurrency) else {
            let range = AccountImportOptions.concurrencyRange
            throw UsageError("--concurrency must be between \(range.lowerBound) and \(range.upperBound)")
        }
        if reportPath?.isEmpty == true { throw UsageError("--report needs a file name") }
        let format: ImportFormat
        if let formatText {
            guard let given = ImportFormat(rawValue: formatText) else {
                throw UsageError("--format must be jsonl or csv, got '\(formatText)'")
            }
            format = given
        } else if path.hasSuffix(".csv") {
            format = .csv
        } else if path.hasSuffix(".jsonl") || path.hasSuffix(".ndjson") {
            format = .jsonl
        } else {
            throw UsageError("cannot tell the format of '\(path)' from its name; give --format jsonl or csv")
        }

        let environment = ProcessInfo.processInfo.environment
        let secrets = try SecretKeyOption.loadIfConfigured(dev: dev)
        let (teamID, clientID) = try appleLinkOwner(team: teamOption, client: clientOption, environment: environment)

        let parameterSets = try parametersPath.map { try HashParametersFile.read($0) } ?? []
        if !parameterSets.isEmpty && secrets == nil {
            throw UsageError(
                "--hash-parameters: the parameters are stored sealed: set UPGRADE_SECRET_KEY_FILE (or pass --dev)"
            )
        }

        let input = try ImportInput(path: path)
        defer { input.close() }
        var runID = try input.identity(
            format: format,
            onConflict: onConflict,
            appleLinkOwner: teamID.map { "\($0) \(clientID ?? "")" },
            sealing: secrets != nil
        )
        var options = AccountImportOptions(runID: runID, source: "\(path == "-" ? "stdin" : path) (\(format.rawValue))")
        options.onConflict = onConflict
        options.batchSize = batchSize
        options.concurrency = concurrency
        options.secrets = secrets
        options.appleTeamID = teamID
        options.appleClientID = clientID

        let importer: AccountImporter
        var scratch: String?
        var lease: JobLease?
        if dryRun {
            // A dry run writes into a scratch database and only reads the real one, which is not
            // created if it does not exist.
            let reference = location.isMissingFile ? nil : try StoreOption.open(location)
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "upgrade-import-\(getpid())-\(UUID().uuidString.prefix(8))"
            ).path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            scratch = directory
            let store = try StoreOption.open(.sqlite(path: directory + "/scratch.db"), create: true)
            _ = try store.migrate(now: Clock.nowSeconds)
            // The real database's parameter sets are copied as they are (sealed), and the file's
            // added to the copy, so the rows name the ids a real run would give them.
            var passwords = PasswordVerifier()
            if let secrets {
                // A real database still without the table has no sets to copy.
                if let reference, let stored = try? reference.read({ try $0.hashParameterSets() }) {
                    try store.write { tx in for record in stored { try tx.insertHashParameterSet(record) } }
                }
                options.hashParameterSets = try HashParametersFile.store(parameterSets, in: store, secrets: secrets)
                passwords.parameterSets = StoredHashParameters(store: store, secrets: secrets)
            }
            importer = AccountImporter(store: store, reference: reference, options: options, passwords: passwords)
        } else {
            let store = try StoreOption.openMigrated(location, batch: true)
            var passwords = PasswordVerifier()
            if let secrets {
                options.hashParameterSets = try HashParametersFile.store(parameterSets, in: store, secrets: secrets)
                // The sets the hashes will name are part of what the rows do, so of the import's identity.
                if !options.hashParameterSets.isEmpty {
                    let bound = options.hashParameterSets.map { "\($0.key.rawValue)=\($0.value)" }.sorted()
                    runID = Digest.sha256(runID + "\n" + bound.joined(separator: ",")).hexString
                    options.runID = runID
                }
                passwords.parameterSets = StoredHashParameters(store: store, secrets: secrets)
            }
            do {
                lease = try JobLease.acquire(
                    job: "accounts-import:" + runID.prefix(16),
                    store: store,
                    timing: try TransferBatchCommand.leaseTiming(environment),
                    now: Clock.nowSeconds
                )
            } catch let error as JobLeaseFailure {
                throw CommandFailure.configuration(error.message)
            }
            importer = AccountImporter(store: store, options: options, passwords: passwords)
        }
        defer {
            lease?.release()
            if let scratch { try? FileManager.default.removeItem(atPath: scratch) }
        }
        let lost = LostFlag()
        lease?.startHeartbeat(
            clock: { Clock.nowSeconds },
            onLost: { message in
                Console.err("error: \(message)")
                lost.set()
            }
        )

        let output = try ImportCommandOutput(reportPath: reportPath, totalBytes: input.size)
        var reader = ImportReader(descriptor: input.descriptor, format: format)
        let summary: ImportSummary
        do {
            summary = try importer.run(
                &reader,
                now: { Clock.nowSeconds },
                onRow: { output.row($0) },
                onBatch: { output.progress($0, bytes: $1) },
                shouldStop: { lost.isSet }
            )
        } catch let failure as ImportFailure {
            output.finish()
            throw failure.isInputError
                ? CommandFailure.configuration("\(path): \(failure.message)") : CommandFailure(failure.message)
        } catch {
            output.finish()
            throw CommandFailure("the import stopped: \(error); committed rows stay, run it again to resume")
        }
        output.finish()
        var line =
            "\(dryRun ? "dry run: would have " : "")created \(summary.created), updated \(summary.updated), "
            + "skipped \(summary.skipped), failed \(summary.failed)"
        if summary.alreadyCommitted > 0 {
            line +=
                "; \(summary.alreadyCommitted) row(s) committed by an earlier run (resumed after line \(summary.resumedAfterLine))"
        }
        if summary.failedInEarlierRuns > 0 {
            line += "; \(summary.failedInEarlierRuns) row(s) failed in earlier runs (see their reports)"
        }
        Console.out(line + " (\(output.elapsedDescription))")
        if let reportPath { Console.out("report: \(reportPath) (\(summary.rows) rows)") }
        return summary.failed > 0 || summary.failedInEarlierRuns > 0 ? ExitCode.failure : ExitCode.success
    }
}

/// Set once by the lease's heartbeat thread, read between batches.
private final class LostFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.withLock { value = true } }
    var isSet: Bool { lock.withLock { value } }
}

/// The input file or standard input, opened once.
private struct ImportInput {
    let descriptor: Int32
    let path: String
    /// The size (for progress).
    let size: Int64

    init(path: String) throws {
        self.path = path
        if path == "-" {
            descriptor = try Self.spoolStandardInput()
        } else {
            descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else {
                throw CommandFailure.configuration("cannot read \(path): \(String(cString: strerror(errno)))")
            }
        }
        var info = stat()
        guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw CommandFailure.configuration("cannot read \(path): not a regular file")
        }
        size = Int64(info.st_size)
    }

    /// Standard input, copied to an unlinked temporary file: its identity is then its content, as
    /// a file's is, and it can be read twice. Memory stays one buffer; the copy lives on disk.
    private static func spoolStandardInput() throws -> Int32 {
        var template = Array((FileManager.default.temporaryDirectory.path + "/upgrade-import-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else {
            throw CommandFailure.configuration("cannot spool standard input: \(String(cString: strerror(errno)))")
        }
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else {
                throw CommandFailure.configuration("cannot read standard input: \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }
            var written = 0
            while written < count {
                let n = buffer.withUnsafeBytes { write(fd, $0.baseAddress! + written, count - written) }
                guard n > 0 else {
                    throw CommandFailure.configuration(
                        "cannot spool standard input: \(String(cString: strerror(errno)))"
                    )
                }
                written += n
            }
        }
        guard lseek(fd, 0, SEEK_SET) == 0 else {
            throw CommandFailure.configuration("cannot spool standard input: \(String(cString: strerror(errno)))")
        }
        return fd
    }

    func close() {
        _ = Glibc.close(descriptor)
    }

    /// The import's identity: SHA-256 of the arguments that change what a row does and of the
    /// input's whole content (read once here, then again from the start by the import). The team and
    /// client `appleSub` rows link under, and whether `totp` rows can be sealed, are among them: a row
    /// refused for want of one is tried again when a rerun gives it, not skipped as done.
    func identity(
        format: ImportFormat,
        onConflict: ImportConflictPolicy,
        appleLinkOwner: String?,
        sealing: Bool
    ) throws -> String {
        var context = Array(
            ("siwa-upgrade accounts import v2\n\(format.rawValue)\n\(onConflict.rawValue)\n"
                + "\(appleLinkOwner ?? "-")\n\(sealing ? "sealing" : "-")\n").utf8
        )
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var hasher = [UInt8]()
        var total: Int64 = 0
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else {
                throw CommandFailure.configuration("cannot read \(path): \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }
            total += Int64(count)
            hasher = Digest.sha256(hasher + buffer[0..<count])
        }
        guard lseek(descriptor, 0, SEEK_SET) == 0 else {
            throw CommandFailure.configuration("cannot read \(path) twice: \(String(cString: strerror(errno)))")
        }
        context += hasher + Array("\n\(total)".utf8)
        return Digest.sha256(context).hexString
    }
}

extension AccountsImportCommand {
    /// The team and client `appleSub` rows are linked under, checked as `serve` and the transfer
    /// commands check them, so that no link is stored that `transfer prepare` would pass over or
    /// Apple would refuse: `--team-id` (else `APPLE_TEAM_ID`) 10 characters A-Z or 0-9; `--client-id`
    /// (else the first of `APPLE_CLIENT_IDS`) one of `APPLE_CLIENT_IDS` when that is set. Either may
    /// be absent until a row needs it (the row is then refused).
    static func appleLinkOwner(
        team: String?,
        client: String?,
        environment: [String: String]
    ) throws -> (
        team: String?, client: String?
    ) {
        let teamID = team ?? ServerSettings.setting("APPLE_TEAM_ID", in: environment)
        if let teamID, !ClientSecretSigner.isAppleIdentifier(teamID) {
            let message = "must be 10 characters A-Z or 0-9, as Apple issues team ids"
            if team != nil { throw UsageError("--team-id \(message)") }
            throw CommandFailure.configuration("APPLE_TEAM_ID \(message)")
        }
        let listed = try ServerSettings.setting("APPLE_CLIENT_IDS", in: environment).map(
            TransferCommandConfiguration.clientIDs
        )
        guard let client else { return (teamID, listed?.first) }
        guard ClientSecretSigner.isClientID(client) else {
            throw UsageError("--client-id must be a bundle id or Services id (printable ASCII, no spaces)")
        }
        if let listed, !listed.contains(client) {
            throw UsageError("--client-id \(client) is not in APPLE_CLIENT_IDS (\(listed.joined(separator: ",")))")
        }
        return (teamID, client)
    }
}
