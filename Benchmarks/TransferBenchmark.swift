import Foundation
import Glibc
import UpgradeEngine

/// `Benchmarks transfer [ACCOUNTS] [CONCURRENCY] [ROUNDS]`: accounts per second through
/// `upgrade-cli transfer prepare` and `transfer complete`, the release CLI run as a child process
/// against the Apple ID emulator in a process of its own, as an operator runs them.
///
/// Each round starts from nothing: a fresh database (a SQLite file, or a database of its own on the
/// PostgreSQL cluster `UPGRADE_DB` names), a fresh emulator, and ACCOUNTS Apple-linked accounts
/// seeded directly (batched transactions here, `POST /emulator/users/batch` there) rather than
/// through the upgrade flow, every other thousand with a hidden email. Then `prepare` with team A's key,
/// the app's transfer to team B in the emulator, and `complete` with team B's key. For each step:
/// accounts per second of the CLI's wall-clock time, its CPU per account (user+system of the reaped
/// child) next to the CPU of one committed one-row transaction here, and the emulator's CPU per
/// account (from /proc) next to its CPU for one bare HTTP round trip. A round fails unless every
/// account ends `transferred`.
func runTransferBenchmark(accounts: Int, concurrency: Int, rounds: Int) throws {
    let binDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        .deletingLastPathComponent()
    let cli = binDirectory.appendingPathComponent("upgrade-cli").path
    guard FileManager.default.isExecutableFile(atPath: cli) else {
        throw BenchmarkError("build upgrade-cli in the same configuration first: swift build -c release")
    }
    let cluster = try ProcessInfo.processInfo.environment["UPGRADE_DB"].flatMap { text -> PostgresConfiguration? in
        guard case .postgres(let configuration) = try DatabaseLocation.parse(text) else { return nil }
        return configuration
    }
    let backend = cluster == nil ? "SQLite" : "PostgreSQL"
    print(
        "transfer batches through upgrade-cli against the Apple ID emulator: \(accounts) accounts, "
            + "--concurrency \(concurrency), \(backend), \(ProcessInfo.processInfo.activeProcessorCount) cores"
    )
    var results: [TransferRound] = []
    for round in 1...rounds {
        let result = try runTransferRound(
            cli: cli,
            accounts: accounts,
            concurrency: concurrency,
            cluster: cluster,
            backend: backend
        )
        print("round \(round):")
        result.print()
        results.append(result)
    }
    if rounds > 1 {
        print("median of \(rounds) rounds (each figure on its own):")
        TransferRound.median(results).print()
    }
}

/// One step's figures.
struct TransferStepFigures {
    var wallSeconds: Double
    var accounts: Int
    var cliCPU: Double
    var emulatorCPU: Double
    var databaseCPU: Double?

    var perSecond: Double { Double(accounts) / wallSeconds }
    func perAccount(_ seconds: Double) -> Double { seconds / Double(accounts) }
}

/// One round's figures, with the primitives they are compared to.
struct TransferRound {
    var prepare: TransferStepFigures
    var complete: TransferStepFigures
    /// CPU seconds of one committed one-row transaction (an audit row) from this process, and
    /// commits per second one thread makes.
    var commitCPU: Double
    var commitRate: Double
    /// The emulator's CPU seconds for one bare keep-alive HTTP round trip (a 404 from its router).
    var emulatorRoundTripCPU: Double
    var backend: String

    func print() {
        for (name, step) in [("prepare", prepare), ("complete", complete)] {
            Swift.print(
                "  " + name.padding(toLength: 9, withPad: " ", startingAt: 0)
                    + String(
                        format: "%7.0f accounts/s (%.2f s wall) = %.2f× the commits/s of one thread (%.0f /s)",
                        step.perSecond,
                        step.wallSeconds,
                        step.perSecond / commitRate,
                        commitRate
                    )
            )
            Swift.print(
                String(
                    format: "           CLI       %6.1f µs CPU per account = %5.1f× one %@ commit's CPU (%.1f µs)",
                    step.perAccount(step.cliCPU) * 1e6,
                    step.perAccount(step.cliCPU) / commitCPU,
                    backend,
                    commitCPU * 1e6
                )
            )
            Swift.print(
                String(
                    format:
                        "           emulator  %6.1f µs CPU per account = %5.1f× its CPU per HTTP round trip (%.1f µs)",
                    step.perAccount(step.emulatorCPU) * 1e6,
                    step.perAccount(step.emulatorCPU) / emulatorRoundTripCPU,
                    emulatorRoundTripCPU * 1e6
                )
            )
            if let database = step.databaseCPU {
                Swift.print(
                    String(
                        format: "           PostgreSQL's server processes %6.1f µs CPU per account",
                        step.perAccount(database) * 1e6
                    )
                )
            }
            // The processes share the machine's cores: their CPU per account bounds the rate.
            let together = step.perAccount(step.cliCPU + step.emulatorCPU + (step.databaseCPU ?? 0))
            let cores = ProcessInfo.processInfo.activeProcessorCount
            Swift.print(
                String(
                    format: "           together  %6.1f µs CPU per account: at most %.0f accounts/s on %d cores",
                    together * 1e6,
                    Double(cores) / together,
                    cores
                )
            )
        }
    }

    /// Each figure's median over the rounds, taken on its own.
    static func median(_ rounds: [TransferRound]) -> TransferRound {
        func middle(_ values: [Double]) -> Double {
            let sorted = values.sorted()
            let count = sorted.count
            return count % 2 == 1 ? sorted[count / 2] : (sorted[count / 2 - 1] + sorted[count / 2]) / 2
        }
        func step(_ pick: (TransferRound) -> TransferStepFigures) -> TransferStepFigures {
            let steps = rounds.map(pick)
            let accounts = steps[0].accounts
            // The median rate, as a wall time for the same number of accounts.
            return TransferStepFigures(
                wallSeconds: Double(accounts) / middle(steps.map(\.perSecond)),
                accounts: accounts,
                cliCPU: middle(steps.map(\.cliCPU)),
                emulatorCPU: middle(steps.map(\.emulatorCPU)),
                databaseCPU: steps.allSatisfy { $0.databaseCPU != nil } ? middle(steps.compactMap(\.databaseCPU)) : nil
            )
        }
        return TransferRound(
            prepare: step(\.prepare),
            complete: step(\.complete),
            commitCPU: middle(rounds.map(\.commitCPU)),
            commitRate: middle(rounds.map(\.commitRate)),
            emulatorRoundTripCPU: middle(rounds.map(\.emulatorRoundTripCPU)),
            backend: rounds[0].backend
        )
    }
}

private func runTransferRound(
    cli: String,
    accounts: Int,
    concurrency: Int,
    cluster: PostgresConfiguration?,
    backend: String
) throws -> TransferRound {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-transfer-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let clientID = "com.example.bench"
    let teamA = "TEAMA12345"
    let teamB = "TEAMB67890"
    let now = Int64(Date().timeIntervalSince1970)

    // A database of the round's own, so earlier rounds' accounts are not walked again.
    let database: BenchmarkDatabase =
        try cluster.map { try .postgres(cluster: $0) } ?? .sqlite(directory.appendingPathComponent("transfer.db").path)
    defer { database.drop() }
    let store = try database.open()
    _ = try store.migrate(now: now)

    let emulator = try ChildProcess(
        cli,
        [
            "emulator", "serve", "--port", "0", "--team", teamA, "--client-id", clientID, "--private-key-out",
            directory.appendingPathComponent("team-a.p8").path,
        ],
        environment: [:],
        readyWhen: "APPLE_BASE_URL="
    )
    defer { emulator.stop() }
    let settings = emulator.output.split(separator: "\n").reduce(into: [String: String]()) { values, line in
        let parts = line.split(separator: "=", maxSplits: 1)
        if parts.count == 2, parts[0].hasPrefix("APPLE_") { values[String(parts[0])] = String(parts[1]) }
    }
    guard let appleBase = settings["APPLE_BASE_URL"] else { throw BenchmarkError("the emulator printed no base URL") }
    let apple = try LeanHTTPConnection(base: appleBase)

    // The users at Apple, then their accounts here, linked with the subs Apple gave team A.
    var users: [(sub: String, email: String, hidden: Bool)] = []
    for start in stride(from: 0, to: accounts, by: 1000) {
        let hidden = (start / 1000) % 2 == 0
        let (status, made) = try apple.post(
            "/emulator/users/batch",
            json: .object([
                "count": .integer(Int64(min(1000, accounts - start))), "clientId": .string(clientID),
                "emailMode": .string(hidden ? "hidden" : "shared"),
            ])
        )
        guard status == 201, let list = made["users"]?.arrayValue else {
            throw BenchmarkError("POST /emulator/users/batch answered \(status): \(made)")
        }
        for user in list {
            users.append((user["sub"]?.stringValue ?? "", user["email"]?.stringValue ?? "", hidden))
        }
    }
    for start in stride(from: 0, to: accounts, by: 1000) {
        try store.write { tx in
            for index in start..<min(accounts, start + 1000) {
                let id = "acct-" + String(format: "%07d", index)
                try tx.insertAccount(
                    AccountRecord(
                        id: id,
                        username: "t\(index)",
                        credentialKind: .appleOnly,
                        createdAt: now,
                        updatedAt: now
                    )
                )
                let user = users[index]
                try tx.insertAppleLink(
                    AppleLinkRecord(
                        accountID: id,
                        sub: user.sub,
                        teamID: teamA,
                        clientID: clientID,
                        email: user.email,
                        isPrivateEmail: user.hidden,
                        refreshTokenCiphertext: nil,
                        status: .linked,
                        linkedAt: now,
                        updatedAt: now
                    )
                )
            }
        }
    }

    // The primitives, measured in this round beside the figures.
    let commitCPU = try cpuPerCommit(store)
    let commits = try commitRate(store, now: now)
    let roundTrips = 2000
    let emulatorBefore = try emulator.cpuSeconds()
    for _ in 0..<roundTrips {
        let (status, _) = try apple.get("/emulator/nothing")
        guard status == 404 else { throw BenchmarkError("GET /emulator/nothing answered \(status)") }
    }
    let emulatorRoundTripCPU = (try emulator.cpuSeconds() - emulatorBefore) / Double(roundTrips)

    let base: [String: String] = [
        "UPGRADE_DB": database.url, "APPLE_BASE_URL": appleBase, "APPLE_CLIENT_IDS": clientID,
    ]
    let senderEnvironment = base.merging([
        "APPLE_TEAM_ID": teamA, "APPLE_KEY_ID": settings["APPLE_KEY_ID"] ?? "",
        "APPLE_PRIVATE_KEY_FILE": settings["APPLE_PRIVATE_KEY_FILE"] ?? "",
    ]) { $1 }
    let prepare = try runTransferStep(
        cli,
        ["transfer", "prepare", "--target-team", teamB, "--concurrency", "\(concurrency)"],
        environment: senderEnvironment,
        log: directory.appendingPathComponent("prepare.log"),
        accounts: accounts,
        emulator: emulator
    )
    let prepared = try store.read { try $0.transferProgress() }
    guard prepared.recordsByStatus["transferPrepared"] == accounts else {
        throw BenchmarkError("after prepare: \(prepared.recordsByStatus), expected \(accounts) transferPrepared")
    }

    // Apple's back office: team B with its key, and the app moved to it (on a new connection: the
    // emulator closes one that sat idle through the batch).
    let office = try LeanHTTPConnection(base: appleBase)
    let (teamStatus, _) = try office.post("/emulator/teams", ["teamId": teamB])
    let (keyStatus, key) = try office.post("/emulator/teams/\(teamB)/keys", ["keyId": "KEYB000001"])
    let (moveStatus, _) = try office.post("/emulator/apps/\(clientID)/transfer", ["toTeamId": teamB])
    guard teamStatus == 201, keyStatus == 201, moveStatus == 200, let pem = key["privateKeyPem"]?.stringValue else {
        throw BenchmarkError(
            "the emulator refused team B or the app's transfer (\(teamStatus), \(keyStatus), \(moveStatus))"
        )
    }
    let keyB = directory.appendingPathComponent("team-b.p8")
    try Data(pem.utf8).write(to: keyB)
    try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyB.path)
    let recipientEnvironment = base.merging([
        "APPLE_TEAM_ID": teamB, "APPLE_KEY_ID": "KEYB000001", "APPLE_PRIVATE_KEY_FILE": keyB.path,
    ]) { $1 }
    let complete = try runTransferStep(
        cli,
        [
            "transfer", "complete", "--accepted-at", "\(Int64(Date().timeIntervalSince1970))", "--concurrency",
            "\(concurrency)",
        ],
        environment: recipientEnvironment,
        log: directory.appendingPathComponent("complete.log"),
        accounts: accounts,
        emulator: emulator
    )
    let completed = try store.read { try $0.transferProgress() }
    guard completed.recordsByStatus["transferred"] == accounts else {
        throw BenchmarkError("after complete: \(completed.recordsByStatus), expected \(accounts) transferred")
    }
    return TransferRound(
        prepare: prepare,
        complete: complete,
        commitCPU: commitCPU,
        commitRate: commits,
        emulatorRoundTripCPU: emulatorRoundTripCPU,
        backend: backend
    )
}

/// Runs one batch command to its end; its output goes to `log`. Fails unless it exits 0 with
/// every account succeeded.
private func runTransferStep(
    _ cli: String,
    _ arguments: [String],
    environment: [String: String],
    log: URL,
    accounts: Int,
    emulator: ChildProcess
) throws -> TransferStepFigures {
    _ = FileManager.default.createFile(atPath: log.path, contents: nil)
    let output = try FileHandle(forWritingTo: log)
    defer { try? output.close() }
    let process = Process()
    // BENCH_CLI_WRAPPER runs the CLI under another program, `{step}` replaced by prepare or complete,
    // e.g. "/usr/bin/perf record -g -o /tmp/{step}.data" (its CPU is then counted with the CLI's).
    if let wrap = ProcessInfo.processInfo.environment["BENCH_CLI_WRAPPER"] {
        let words = wrap.split(separator: " ").map { $0.replacingOccurrences(of: "{step}", with: arguments[1]) }
        process.executableURL = URL(fileURLWithPath: words[0])
        process.arguments = Array(words.dropFirst()) + [cli] + arguments
    } else {
        process.executableURL = URL(fileURLWithPath: cli)
        process.arguments = arguments
    }
    process.environment = ["PATH": "/usr/bin:/bin"].merging(environment) { $1 }
    process.standardOutput = output
    process.standardError = output
    let childrenBefore = childrenCPUSeconds()
    let emulatorBefore = try emulator.cpuSeconds()
    let databaseBefore = postgresServerCPUSeconds()
    let started = DispatchTime.now().uptimeNanoseconds
    try process.run()
    process.waitUntilExit()
    let wall = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
    let emulatorCPU = try emulator.cpuSeconds() - emulatorBefore
    let databaseCPU = postgresServerCPUSeconds().flatMap { after in databaseBefore.map { after - $0 } }
    let cliCPU = childrenCPUSeconds() - childrenBefore
    let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
    let step = arguments[1]
    guard process.terminationStatus == 0, text.contains("\(step): \(accounts) rows: \(accounts) succeeded") else {
        throw BenchmarkError(
            "\(arguments.prefix(2).joined(separator: " ")) exited \(process.terminationStatus): "
                + text.split(separator: "\n").suffix(5).joined(separator: "\n")
        )
    }
    return TransferStepFigures(
        wallSeconds: wall,
        accounts: accounts,
        cliCPU: cliCPU,
        emulatorCPU: emulatorCPU,
        databaseCPU: databaseCPU
    )
}

/// User+system CPU seconds of this process's children that have ended and been waited for.
func childrenCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_CHILDREN.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

/// Where one round's data lives: a SQLite file, or a database of its own on a PostgreSQL cluster
/// (made with `createdb`, removed with `dropdb`; the password goes by environment, never argv).
enum BenchmarkDatabase {
    case sqlite(String)
    case postgres(url: String, cluster: PostgresConfiguration, name: String)

    static func postgres(cluster: PostgresConfiguration) throws -> BenchmarkDatabase {
        let name =
            "transfer_bench_"
            + String(UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12))
            .lowercased()
        try runTool("createdb", cluster: cluster, name: name)
        guard var components = URLComponents(string: "postgres://") else { throw BenchmarkError("no URL") }
        components.host = cluster.host
        components.port = cluster.port
        components.user = cluster.user
        components.password = cluster.password
        components.path = "/" + name
        guard let url = components.string else { throw BenchmarkError("cannot name the benchmark database") }
        return .postgres(url: url, cluster: cluster, name: name)
    }

    var url: String {
        switch self {
        case .sqlite(let path): "sqlite:" + path
        case .postgres(let url, _, _): url
        }
    }

    func open() throws -> any UpgradeStore {
        try DatabaseLocation.parse(url).open()
    }

    func drop() {
        if case .postgres(_, let cluster, let name) = self {
            try? Self.runTool("dropdb", "--force", cluster: cluster, name: name)
        }
    }

    private static func runTool(
        _ tool: String,
        _ options: String...,
        cluster: PostgresConfiguration,
        name: String
    )
        throws
    {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/" + tool)
        process.arguments = ["--maintenance-db", cluster.database] + options + [name]
        process.environment = [
            "PATH": "/usr/bin:/bin", "PGHOST": cluster.host, "PGPORT": "\(cluster.port)", "PGUSER": cluster.user ?? "",
            "PGPASSWORD": cluster.password ?? "",
        ]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BenchmarkError("\(tool) \(name) failed (exit \(process.terminationStatus))")
        }
    }
}
