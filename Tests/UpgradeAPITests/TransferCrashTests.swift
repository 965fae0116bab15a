import Foundation
import Glibc
import Synchronization
import Testing
import UpgradeAPI
import UpgradeTestSupport

@testable import AppleEmulator
@testable import UpgradeEngine

/// `upgrade-cli transfer prepare` and `transfer complete` as real processes, each killed with
/// SIGKILL at random moments of a batch of Apple-linked accounts and run again until it finishes:
/// every account is prepared once and transferred once, with one audit row and one webhook event
/// per change, whatever Apple was asked twice. The moments come from a seeded generator; a failure
/// names its seed, and `UPGRADE_TEST_SEED=N` replays it.
@Suite("Transfer batches killed with SIGKILL and run again")
struct TransferCrashTests {
    static let accounts = 400
    static let killsPerStep = 3
    static let concurrency = 4
    static let teamA = "TEAMA12345"
    static let teamB = "TEAMB67890"
    static let teamC = "TEAMC24680"
    static let keyA = "KEYA123456"
    static let keyB = "KEYB123456"
    static let keyC = "KEYC123456"
    static let clientID = "com.example.app"

    /// Reproducible moments: SplitMix64.
    struct SeededGenerator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    /// Apple's endpoints (the in-process emulator) as the batches reach them: counts each
    /// `/auth/usermigrationinfo` call by the identifier it asks about, and can kill the running
    /// batch the moment Apple has answered its n-th call, before the answer leaves.
    final class MigrationApple: HTTPHandler {
        private struct State {
            var calls: [String: Int] = [:]
            var callsThisRun = 0
            var killAtCall: Int?
            var pid: pid_t = 0
            var fired = false
        }
        private let emulatorHandler: AppleIDEmulatorHandler
        private let state = Mutex(State())

        init(_ emulator: AppleIDEmulator) {
            emulatorHandler = AppleIDEmulatorHandler(emulator: emulator)
        }

        /// Before a run: kill it at Apple's `call`-th answer (counted from this run's first), or never.
        func arm(killAtCall call: Int?) {
            state.withLock {
                $0.callsThisRun = 0
                $0.killAtCall = call
                $0.pid = 0
                $0.fired = false
            }
        }

        /// The run's process, once started; whether its moment already came (the caller kills it then).
        func started(_ pid: pid_t) -> Bool {
            state.withLock {
                $0.pid = pid
                return $0.fired
            }
        }

        var fired: Bool { state.withLock { $0.fired } }
        var calls: [String: Int] { state.withLock { $0.calls } }

        func handle(_ request: HTTPRequest) throws -> HTTPResponse {
            let response = try emulatorHandler.handle(request)
            guard request.path == "/auth/usermigrationinfo" else { return response }
            let form = Self.form(request.body)
            let asked = form["sub"] ?? form["transfer_sub"] ?? ""
            let victim = state.withLock { state -> pid_t? in
                state.calls[asked, default: 0] += 1
                state.callsThisRun += 1
                guard state.callsThisRun == state.killAtCall else { return nil }
                state.fired = true
                return state.pid == 0 ? nil : state.pid
            }
            if let victim { kill(victim, SIGKILL) }
            return response
        }

        static func form(_ body: [UInt8]) -> [String: String] {
            var fields: [String: String] = [:]
            for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1).map {
                    $0.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String($0)
                }
                if parts.count == 2 { fields[parts[0]] = parts[1] }
            }
            return fields
        }
    }

    /// One step's rows as committed, read in one statement (one snapshot on either backend): the
    /// records that reached the step, its audit rows and its webhook events. The three are written
    /// in one transaction, so every snapshot has them equal.
    struct Progress: Equatable, CustomStringConvertible {
        var records: Int
        var audits: Int
        var events: Int
        var consistent: Bool { records == audits && audits == events }
        var description: String { "\(records) records, \(audits) audit rows, \(events) events" }
    }

    /// A batch step as the test watches it: what its committed rows look like, and what each
    /// committed row writes beside them in the same transaction.
    struct Step: CustomStringConvertible {
        /// The command's word, which starts its summary line.
        var command: String
        /// Names the run's output files.
        var label: String
        var job: String
        /// Which records the step has reached.
        var recordReached: String
        var auditEvent: String
        var webhookType: String
        /// Events of that type written before the step began (an earlier transfer's).
        var earlierEvents = 0
        var description: String { label }

        static let prepare = Step(
            command: "prepare",
            label: "prepare",
            job: "transfer prepare \(TransferCrashTests.teamB)",
            recordReached: "transfer_sub IS NOT NULL",
            auditEvent: "transfer.transferIdentifierObtained",
            webhookType: "transfer.prepared"
        )
        static let complete = Step(
            command: "complete",
            label: "complete",
            job: "transfer complete",
            recordReached:
                "new_sub IS NOT NULL AND account_id IN (SELECT account_id FROM apple_links WHERE team_id = '\(TransferCrashTests.teamB)')",
            auditEvent: "transfer.newSubObtained",
            webhookType: "transfer.completed"
        )
        /// Team B moving the app on to team C: each account's finished record retired in the
        /// transaction of its new transfer identifier (docs/apple-protocol.md §3.2, "A later transfer").
        static let laterPrepare = Step(
            command: "prepare",
            label: "later-prepare",
            job: "transfer prepare \(TransferCrashTests.teamC)",
            recordReached: "transfer_sub IS NOT NULL AND target_team_id = '\(TransferCrashTests.teamC)'",
            auditEvent: "transfer.beginNextTransfer",
            webhookType: "transfer.prepared",
            earlierEvents: TransferCrashTests.accounts
        )
    }

    static func rows(_ store: any UpgradeStore, _ sql: String) throws -> [[SQLValue]] {
        try store.read { tx in
            switch tx {
            case let sqlite as SQLiteTransaction: return try sqlite.rows(sql)
            case let postgres as PostgresTransaction: return try postgres.rows(sql)
            default: throw StorageError(.configuration, "unknown transaction")
            }
        }
    }

    /// The test's own change to the database (time passing), outside any batch.
    static func execute(_ store: any UpgradeStore, _ sql: String) throws {
        try store.write { tx in
            switch tx {
            case let sqlite as SQLiteTransaction: _ = try sqlite.rows(sql)
            case let postgres as PostgresTransaction: _ = try postgres.rows(sql)
            default: throw StorageError(.configuration, "unknown transaction")
            }
        }
    }

    static func integer(_ value: SQLValue?) -> Int {
        if case .integer(let number) = value { return Int(number) }
        return -1
    }

    static func text(_ value: SQLValue?) -> String {
        if case .text(let string) = value { return string }
        return ""
    }

    static func progress(_ store: any UpgradeStore, _ step: Step) throws -> Progress {
        let row = try rows(
            store,
            """
            SELECT (SELECT COUNT(*) FROM transfer_records WHERE \(step.recordReached)),
                (SELECT COUNT(*) FROM audit_events WHERE event = '\(step.auditEvent)'),
                (SELECT COUNT(*) FROM webhook_outbox WHERE type = '\(step.webhookType)') - \(step.earlierEvents)
            """
        ).first
        return Progress(records: integer(row?[0]), audits: integer(row?[1]), events: integer(row?[2]))
    }

    /// Waits (bounded) until no live run holds `step`'s lease: released, or lapsed after a kill.
    static func waitForLease(_ store: any UpgradeStore, _ step: Step) throws {
        for _ in 0..<100 {
            guard let lease = try store.read({ try $0.jobLease(job: step.job) }) else { return }
            if Int64(Date().timeIntervalSince1970) >= lease.expiresAt { return }
            usleep(100_000)
        }
        throw POSIXError(.ETIMEDOUT)
    }

    /// Starts the step as a process with its output in files under `directory`.
    static func start(
        _ arguments: [String],
        environment: [String: String],
        directory: URL,
        name: String
    ) throws -> (process: Process, stdout: URL, stderr: URL) {
        let stdout = directory.appendingPathComponent("\(name).out")
        let stderr = directory.appendingPathComponent("\(name).err")
        _ = FileManager.default.createFile(atPath: stdout.path, contents: nil)
        _ = FileManager.default.createFile(atPath: stderr.path, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try UpgradeCLI.executable())
        process.arguments = arguments
        process.environment = ["PATH": "/usr/bin:/bin"].merging(environment) { $1 }
        let out = try FileHandle(forWritingTo: stdout)
        let err = try FileHandle(forWritingTo: stderr)
        // The child has its own copies; these would otherwise stay open in the test process.
        defer {
            try? out.close()
            try? err.close()
        }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = out
        process.standardError = err
        try process.run()
        return (process, stdout, stderr)
    }

    /// What one step went through: the kills that landed mid-batch, the snapshots that showed a row
    /// half written, and the last run's summary line.
    struct StepResult {
        var kills = 0
        var inconsistent: [Progress] = []
        var summary = ""
        var status: Int32 = -1
        var committedBeforeLastRun = 0
    }

    /// Runs `step` to its end: killed `killsPerStep` times at random moments (Apple's n-th answer,
    /// or the n-th committed row), then run until it exits 0.
    static func run(
        _ step: Step,
        arguments: [String],
        environment: [String: String],
        store: any UpgradeStore,
        apple: MigrationApple,
        directory: URL,
        generator: inout SeededGenerator,
        replay: String
    ) throws -> StepResult {
        var result = StepResult()
        for attempt in 0..<(killsPerStep + 4) {
            // Counted once the last run's lease is free: a run killed as it sent COMMIT may still
            // see it land on PostgreSQL after its process is reaped, never after its lease lapsed.
            try waitForLease(store, step)
            let done = try progress(store, step).records
            let finalRun = result.kills == killsPerStep
            // Within the first third of what is left, so the moment comes well before the batch ends.
            let reach = max(1, (accounts - done) / 3)
            let atAppleAnswer = !finalRun && Bool.random(using: &generator)
            let killAtCall = atAppleAnswer ? Int.random(in: 1...reach, using: &generator) : nil
            let killAtCommitted = finalRun || atAppleAnswer ? nil : done + Int.random(in: 1...reach, using: &generator)
            if finalRun { result.committedBeforeLastRun = done }
            apple.arm(killAtCall: killAtCall)
            let run = try start(
                arguments + (finalRun ? ["--report", directory.appendingPathComponent("\(step).jsonl").path] : []),
                environment: environment,
                directory: directory,
                name: "\(step)-\(attempt)"
            )
            if apple.started(run.process.processIdentifier) { kill(run.process.processIdentifier, SIGKILL) }
            let deadline = ContinuousClock.now + .seconds(60)
            while run.process.isRunning {
                let seen = try progress(store, step)
                // The first few are enough to show what was half written.
                if !seen.consistent, result.inconsistent.count < 10 { result.inconsistent.append(seen) }
                if let target = killAtCommitted, seen.records >= target {
                    kill(run.process.processIdentifier, SIGKILL)
                    break
                }
                if ContinuousClock.now > deadline {
                    kill(run.process.processIdentifier, SIGKILL)
                    Issue.record("\(step) run \(attempt) did not end within 60 s; \(replay)")
                    break
                }
                usleep(2_000)
            }
            run.process.waitUntilExit()
            let stderr = (try? String(contentsOf: run.stderr, encoding: .utf8)) ?? ""
            if run.process.terminationReason == .uncaughtSignal {
                if finalRun { throw POSIXError(.EINTR) }
                result.kills += 1
                continue
            }
            // A rerun that found the killed run's lease a moment before it lapsed changed nothing.
            if run.process.terminationStatus == 2, stderr.contains("is already running") { continue }
            result.status = run.process.terminationStatus
            result.summary =
                ((try? String(contentsOf: run.stdout, encoding: .utf8)) ?? "").split(separator: "\n")
                .first { $0.hasPrefix("\(step.command): ") }.map(String.init) ?? stderr
            if finalRun { return result }
            // The batch ended before its moment came: it is done, with fewer kills than meant.
            Issue.record("\(step) run \(attempt) ended before it was killed: \(result.summary); \(replay)")
            return result
        }
        Issue.record("\(step) did not finish after \(killsPerStep) kills; \(replay)")
        return result
    }

    /// The step once more after it finished: every row already done, Apple not asked.
    static func runAgain(
        _ step: Step,
        arguments: [String],
        environment: [String: String],
        apple: MigrationApple,
        directory: URL
    ) throws {
        let before = apple.calls
        let again = try start(arguments, environment: environment, directory: directory, name: "\(step)-again")
        again.process.waitUntilExit()
        let output = (try? String(contentsOf: again.stdout, encoding: .utf8)) ?? ""
        #expect(again.process.terminationStatus == 0, "\(output)")
        #expect(output.contains("\(step.command): \(accounts) rows: \(accounts) already-done\n"), "\(output)")
        #expect(apple.calls == before, "a finished batch asks Apple nothing")
    }

    @Test(
        "prepare and complete killed with SIGKILL at random moments, then a later transfer's prepare: each account prepared and transferred once per transfer, its earlier record retired once, one audit row and one event per change",
        arguments: Backend.all
    )
    func killedAndRerun(_ backend: Backend) throws {
        let seed =
            ProcessInfo.processInfo.environment["UPGRADE_TEST_SEED"].flatMap { UInt64($0) }
            ?? .random(in: 1...UInt64.max)
        let replay = "seed \(seed) (replay with UPGRADE_TEST_SEED=\(seed))"
        var generator = SeededGenerator(state: seed)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "siwa-transfer-crash-\(UUID().uuidString)"
        )
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        // Apple: both teams, the app in team A, on loopback.
        let emulator = AppleIDEmulator()
        let keyA = P256PrivateKey()
        let keyB = P256PrivateKey()
        try emulator.addTeam(Self.teamA)
        try emulator.addTeam(Self.teamB)
        try emulator.registerKey(teamID: Self.teamA, keyID: Self.keyA, publicKey: keyA.publicKey)
        try emulator.registerKey(teamID: Self.teamB, keyID: Self.keyB, publicKey: keyB.publicKey)
        try emulator.addApp(clientID: Self.clientID, teamID: Self.teamA)
        let apple = MigrationApple(emulator)
        var appleConfiguration = HTTPServer.Configuration()
        appleConfiguration.port = 0
        appleConfiguration.workerCount = 8
        appleConfiguration.onEvent = { _ in }
        let appleServer = HTTPServer(configuration: appleConfiguration, handler: apple)
        try appleServer.start()
        defer {
            appleServer.shutdown()
            appleServer.wait()
        }
        let keyFileA = directory.appendingPathComponent("a.p8").path
        let keyFileB = directory.appendingPathComponent("b.p8").path
        try writeOwnerOnly(keyA.pemRepresentation, to: keyFileA)
        try writeOwnerOnly(keyB.pemRepresentation, to: keyFileB)

        // Accounts linked to team A's users, as completed upgrades leave them.
        let database = try ServerDatabase(backend)
        let store = try DatabaseLocation.parse(database.url).open()
        _ = try store.migrate(now: Int64(Date().timeIntervalSince1970))
        var users: [(accountID: String, appleUserID: String, subA: String)] = []
        let now = Int64(Date().timeIntervalSince1970)
        for index in 0..<Self.accounts {
            let appleUserID = try emulator.createUser(email: "user\(index)@example.com")
            let authorization = try emulator.authorize(
                userID: appleUserID,
                clientID: Self.clientID,
                nonce: nil,
                state: nil,
                emailMode: .hidden
            )
            users.append((String(format: "acct-%04d", index), appleUserID, authorization.user))
            try store.write { tx in
                try tx.insertAccount(
                    AccountRecord(
                        id: users[index].accountID,
                        username: "user\(index)",
                        credentialKind: .appleOnly,
                        createdAt: now,
                        updatedAt: now
                    )
                )
                try tx.insertAppleLink(
                    AppleLinkRecord(
                        accountID: users[index].accountID,
                        sub: authorization.user,
                        teamID: Self.teamA,
                        clientID: Self.clientID,
                        email: authorization.email,
                        isPrivateEmail: true,
                        refreshTokenCiphertext: nil,
                        status: .linked,
                        linkedAt: now,
                        updatedAt: now
                    )
                )
            }
        }

        let common = [
            "UPGRADE_DB": database.url, "UPGRADE_JOB_LEASE_SECONDS": "2",
            "APPLE_BASE_URL": "http://127.0.0.1:\(appleServer.port)", "APPLE_CLIENT_IDS": Self.clientID,
        ]
        let concurrency = ["--concurrency", String(Self.concurrency)]

        // Team A prepares.
        let prepare = ["transfer", "prepare", "--target-team", Self.teamB] + concurrency
        let teamAEnvironment = common.merging([
            "APPLE_TEAM_ID": Self.teamA, "APPLE_KEY_ID": Self.keyA, "APPLE_PRIVATE_KEY_FILE": keyFileA,
        ]) { $1 }
        let prepared = try Self.run(
            .prepare,
            arguments: prepare,
            environment: teamAEnvironment,
            store: store,
            apple: apple,
            directory: directory,
            generator: &generator,
            replay: replay
        )
        #expect(prepared.kills == Self.killsPerStep, "\(replay)")
        #expect(prepared.status == 0, "\(prepared.summary); \(replay)")
        let preparedRest = Self.accounts - prepared.committedBeforeLastRun
        #expect(
            prepared.summary
                == "prepare: \(Self.accounts) rows: \(preparedRest) succeeded, \(prepared.committedBeforeLastRun) already-done",
            "\(replay)"
        )
        #expect(prepared.inconsistent.isEmpty, "half-written rows seen: \(prepared.inconsistent); \(replay)")
        try Self.runAgain(
            .prepare,
            arguments: prepare,
            environment: teamAEnvironment,
            apple: apple,
            directory: directory
        )
        let afterPrepare = apple.calls

        // App Store Connect moves the app; team B completes.
        try emulator.transferApp(clientID: Self.clientID, toTeam: Self.teamB)
        let acceptedAt = Int64(Date().timeIntervalSince1970)
        let complete = ["transfer", "complete", "--accepted-at", String(acceptedAt)] + concurrency
        let teamBEnvironment = common.merging([
            "APPLE_TEAM_ID": Self.teamB, "APPLE_KEY_ID": Self.keyB, "APPLE_PRIVATE_KEY_FILE": keyFileB,
        ]) { $1 }
        let completed = try Self.run(
            .complete,
            arguments: complete,
            environment: teamBEnvironment,
            store: store,
            apple: apple,
            directory: directory,
            generator: &generator,
            replay: replay
        )
        #expect(completed.kills == Self.killsPerStep, "\(replay)")
        #expect(completed.status == 0, "\(completed.summary); \(replay)")
        let completedRest = Self.accounts - completed.committedBeforeLastRun
        #expect(
            completed.summary
                == "complete: \(Self.accounts) rows: \(completedRest) succeeded, \(completed.committedBeforeLastRun) already-done",
            "\(replay)"
        )
        #expect(completed.inconsistent.isEmpty, "half-written rows seen: \(completed.inconsistent); \(replay)")
        try Self.runAgain(
            .complete,
            arguments: complete,
            environment: teamBEnvironment,
            apple: apple,
            directory: directory
        )
        let calls = apple.calls

        // Each account: prepared and transferred once, its link on team B's id.
        let records = try Self.rows(
            store,
            "SELECT account_id, status, old_sub, transfer_sub, new_sub, target_team_id, attempts FROM transfer_records ORDER BY account_id"
        )
        let links = try Self.rows(store, "SELECT account_id, sub, team_id, status FROM apple_links ORDER BY account_id")
        #expect(records.count == Self.accounts && links.count == Self.accounts, "\(replay)")
        let service = TransferService(
            store: store,
            apple: EmulatedAppleClient(emulator: emulator, teamID: Self.teamB, keyID: Self.keyB, privateKey: keyB),
            configuration: TransferServiceConfiguration(teamID: Self.teamB)
        )
        var transferSubs: Set<String> = []
        for (user, (record, link)) in zip(users, zip(records, links)) {
            let newSub = try emulator.subject(userID: user.appleUserID, teamID: Self.teamB)
            let transferSub = Self.text(record[3])
            transferSubs.insert(transferSub)
            #expect(Self.text(record[0]) == user.accountID && Self.text(link[0]) == user.accountID)
            #expect(Self.text(record[1]) == "transferred", "\(user.accountID); \(replay)")
            #expect(Self.text(record[2]) == user.subA && Self.text(record[4]) == newSub, "\(user.accountID)")
            #expect(Self.text(record[5]) == Self.teamB)
            #expect(Self.integer(record[6]) == 2, "one prepare and one exchange recorded: \(user.accountID); \(replay)")
            #expect(Self.text(link[1]) == newSub && Self.text(link[2]) == Self.teamB && Self.text(link[3]) == "linked")
            #expect(try service.credentialState(userID: user.subA) == .transferred)
            #expect(try service.credentialState(userID: newSub) == .authorized)
            // Apple: asked at least once per account, again only for rows a kill caught in flight.
            #expect((afterPrepare[user.subA] ?? 0) >= 1 && (calls[transferSub] ?? 0) >= 1)
        }
        #expect(transferSubs.count == Self.accounts)
        let preparedCalls = users.map { afterPrepare[$0.subA] ?? 0 }.reduce(0, +)
        let exchangeCalls = transferSubs.map { calls[$0] ?? 0 }.reduce(0, +)
        #expect(
            preparedCalls <= Self.accounts + Self.killsPerStep * Self.concurrency,
            "\(preparedCalls) transfer_sub calls; \(replay)"
        )
        #expect(
            exchangeCalls <= Self.accounts + Self.killsPerStep * Self.concurrency,
            "\(exchangeCalls) exchanges; \(replay)"
        )
        #expect(calls.values.reduce(0, +) == preparedCalls + exchangeCalls, "no other migration call")

        // One audit row per change, in order, nothing else.
        let audit = try Self.rows(
            store,
            "SELECT account_id, event, from_status, to_status FROM audit_events ORDER BY id"
        )
        let auditByAccount = Dictionary(grouping: audit) { Self.text($0[0]) }
        #expect(audit.count == 2 * Self.accounts, "\(audit.count) audit rows; \(replay)")
        let events = try Self.rows(
            store,
            "SELECT account_id, account_seq, type, payload FROM webhook_outbox ORDER BY account_id, account_seq"
        )
        let eventsByAccount = Dictionary(grouping: events) { Self.text($0[0]) }
        #expect(events.count == 2 * Self.accounts, "\(events.count) webhook events; \(replay)")
        for (user, link) in zip(users, links) {
            let trail = (auditByAccount[user.accountID] ?? []).map {
                "\(Self.text($0[1])) \(Self.text($0[2]))→\(Self.text($0[3]))"
            }
            #expect(
                trail == [
                    "transfer.transferIdentifierObtained linked→transferPrepared",
                    "transfer.newSubObtained transferPrepared→transferred",
                ],
                "\(user.accountID): \(trail); \(replay)"
            )
            let mine = eventsByAccount[user.accountID] ?? []
            #expect(
                mine.map { "\(Self.integer($0[1])) \(Self.text($0[2]))" } == [
                    "1 transfer.prepared", "2 transfer.completed",
                ],
                "\(user.accountID); \(replay)"
            )
            if let last = mine.last {
                let payload = try JSONValue.parse(Array(Self.text(last[3]).utf8))
                #expect(payload["data"]?["oldSub"]?.stringValue == user.subA)
                #expect(payload["data"]?["newSub"]?.stringValue == Self.text(link[1]))
            }
        }
        #expect(try Self.rows(store, "SELECT job FROM job_leases").isEmpty, "every lease released")

        // Later, team B moves the app on to team C once A -> B's window has closed: the acceptance
        // and the migrations put 61 days back, as time would have.
        let past = Int64(Date().timeIntervalSince1970) - 61 * 86_400
        try Self.execute(store, "UPDATE transfer_records SET updated_at = \(past), window_ends_at = \(past + 86_400)")
        let keyC = P256PrivateKey()
        try emulator.addTeam(Self.teamC)
        try emulator.registerKey(teamID: Self.teamC, keyID: Self.keyC, publicKey: keyC.publicKey)
        let keyFileC = directory.appendingPathComponent("c.p8").path
        try writeOwnerOnly(keyC.pemRepresentation, to: keyFileC)
        let laterPrepare = ["transfer", "prepare", "--target-team", Self.teamC] + concurrency
        let movedOn = try Self.run(
            .laterPrepare,
            arguments: laterPrepare,
            environment: teamBEnvironment,
            store: store,
            apple: apple,
            directory: directory,
            generator: &generator,
            replay: replay
        )
        #expect(movedOn.kills == Self.killsPerStep, "\(replay)")
        #expect(movedOn.status == 0, "\(movedOn.summary); \(replay)")
        let movedOnRest = Self.accounts - movedOn.committedBeforeLastRun
        #expect(
            movedOn.summary
                == "prepare: \(Self.accounts) rows: \(movedOnRest) succeeded, \(movedOn.committedBeforeLastRun) already-done",
            "\(replay)"
        )
        #expect(movedOn.inconsistent.isEmpty, "half-written rows seen: \(movedOn.inconsistent); \(replay)")
        try Self.runAgain(
            .laterPrepare,
            arguments: laterPrepare,
            environment: teamBEnvironment,
            apple: apple,
            directory: directory
        )

        // Each account: its A -> B record retired once, unchanged; a new record from B's id to C.
        let retired = try Self.rows(
            store,
            "SELECT account_id, status, old_sub, new_sub, target_team_id FROM retired_transfer_records ORDER BY account_id"
        )
        let moving = try Self.rows(
            store,
            "SELECT account_id, status, old_sub, target_team_id, attempts FROM transfer_records ORDER BY account_id"
        )
        #expect(retired.count == Self.accounts && moving.count == Self.accounts, "\(retired.count) retired; \(replay)")
        let laterAudit = Dictionary(
            grouping: try Self.rows(
                store,
                "SELECT account_id, event, from_status, to_status FROM audit_events ORDER BY id"
            )
        ) { Self.text($0[0]) }
        let laterEvents = Dictionary(
            grouping: try Self.rows(
                store,
                "SELECT account_id, type FROM webhook_outbox ORDER BY account_id, account_seq"
            )
        ) { Self.text($0[0]) }
        for (user, (old, new)) in zip(users, zip(retired, moving)) {
            let subB = try emulator.subject(userID: user.appleUserID, teamID: Self.teamB)
            #expect(Self.text(old[0]) == user.accountID && Self.text(old[1]) == "transferred")
            #expect(Self.text(old[2]) == user.subA && Self.text(old[3]) == subB && Self.text(old[4]) == Self.teamB)
            #expect(Self.text(new[0]) == user.accountID && Self.text(new[1]) == "transferPrepared", "\(replay)")
            #expect(Self.text(new[2]) == subB && Self.text(new[3]) == Self.teamC && Self.integer(new[4]) == 1)
            let trail = (laterAudit[user.accountID] ?? []).dropFirst(2).map {
                "\(Self.text($0[1])) \(Self.text($0[2]))→\(Self.text($0[3]))"
            }
            #expect(
                trail == [
                    "transfer.beginNextTransfer transferred→linked",
                    "transfer.transferIdentifierObtained linked→transferPrepared",
                ],
                "\(user.accountID): \(trail); \(replay)"
            )
            #expect(
                (laterEvents[user.accountID] ?? []).map { Self.text($0[1]) } == [
                    "transfer.prepared", "transfer.completed", "transfer.prepared",
                ],
                "\(user.accountID); \(replay)"
            )
        }

        // Team C completes, and every id the account ever had answers as it should.
        try emulator.transferApp(clientID: Self.clientID, toTeam: Self.teamC)
        let teamCEnvironment = common.merging([
            "APPLE_TEAM_ID": Self.teamC, "APPLE_KEY_ID": Self.keyC, "APPLE_PRIVATE_KEY_FILE": keyFileC,
        ]) { $1 }
        let completeC = try Self.start(
            ["transfer", "complete", "--accepted-at", String(Int64(Date().timeIntervalSince1970))] + concurrency,
            environment: teamCEnvironment,
            directory: directory,
            name: "complete-c"
        )
        completeC.process.waitUntilExit()
        let completedC = (try? String(contentsOf: completeC.stdout, encoding: .utf8)) ?? ""
        #expect(completeC.process.terminationStatus == 0, "\(completedC)")
        #expect(completedC.contains("complete: \(Self.accounts) rows: \(Self.accounts) succeeded\n"), "\(completedC)")
        let serviceC = TransferService(
            store: store,
            apple: EmulatedAppleClient(emulator: emulator, teamID: Self.teamC, keyID: Self.keyC, privateKey: keyC),
            configuration: TransferServiceConfiguration(teamID: Self.teamC)
        )
        for user in users {
            let subB = try emulator.subject(userID: user.appleUserID, teamID: Self.teamB)
            let subC = try emulator.subject(userID: user.appleUserID, teamID: Self.teamC)
            #expect(try serviceC.credentialState(userID: user.subA) == .transferred, "\(user.accountID)")
            #expect(try serviceC.credentialState(userID: subB) == .transferred, "\(user.accountID)")
            #expect(try serviceC.credentialState(userID: subC) == .authorized, "\(user.accountID)")
        }
    }
}
