import Foundation
import Synchronization
import UpgradeEngine

// Prints throughput of the engine's hot paths next to the cost of the primitives they rest on, as
// ratios, so figures stay comparable across machines. Run with: swift run -c release Benchmarks

/// BENCH_QUICK=1 (Benchmarks/smoke.sh): each measurement a twentieth as long, fewer rows; the figures
/// then only show that every part runs.
let quick = ProcessInfo.processInfo.environment["BENCH_QUICK"] != nil

/// Runs `body` repeatedly for about `seconds` and returns operations per second.
func measure(_ seconds: Double = 1.0, batch: Int = 64, _ body: () throws -> Void) rethrows -> Double {
    let seconds = quick ? seconds / 20 : seconds
    for _ in 0..<min(batch, 16) { try body() }  // warm-up
    var iterations = 0
    let start = DispatchTime.now().uptimeNanoseconds
    var elapsed: Double = 0
    repeat {
        for _ in 0..<batch { try body() }
        iterations += batch
        elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    } while elapsed < seconds
    return Double(iterations) / elapsed
}

func report(_ name: String, _ rate: Double, relativeTo base: (name: String, rate: Double)? = nil) {
    var line = "\(name.padding(toLength: 60, withPad: " ", startingAt: 0)) \(String(format: "%12.0f", rate)) /s"
    if let base {
        line += String(format: "   %6.3f× %@", rate / base.rate, base.name)
    }
    print(line)
}

// `Benchmarks upgrade-cpu [COUNT] [CLIENTS]`: server CPU per completed upgrade, in separate
// processes, with CLIENTS devices upgrading at once (1 by default); the accounts' hashes have the
// parameters `PasswordHasher()` uses, the server's own, so none is rehashed.
if CommandLine.arguments.dropFirst().first == "upgrade-cpu" {
    let numbers = CommandLine.arguments.dropFirst(2)
    let count = numbers.first.flatMap { Int($0) } ?? 300
    let clients = numbers.dropFirst().first.flatMap { Int($0) } ?? 1
    guard count > 0, (1...64).contains(clients), numbers.count <= 2, numbers.allSatisfy({ Int($0) != nil }) else {
        fail("usage: Benchmarks upgrade-cpu [COUNT > 0] [CLIENTS 1...64]", status: 2)
    }
    failOnError("upgrade-cpu") { try runUpgradeCPUBenchmark(count: count, clients: clients) }
    exit(0)
}

// `Benchmarks upgrade-history [PAST] [ROUNDS] [--db postgres://...]`: CPU per upgrade for an
// account with PAST past upgrades against a fresh account, on SQLite and on PostgreSQL.
if CommandLine.arguments.dropFirst().first == "upgrade-history" {
    exit(upgradeHistoryCommand(Array(CommandLine.arguments.dropFirst(2))))
}

// `Benchmarks report [ACCOUNTS] [--db postgres://...]`: how long the migration report takes over
// ACCOUNTS accounts' history, on SQLite and on PostgreSQL.
if CommandLine.arguments.dropFirst().first == "report" {
    exit(migrationReportCommand(Array(CommandLine.arguments.dropFirst(2))))
}

// `Benchmarks webhooks [COUNT] [ACCOUNTS]`: webhook deliveries per second to a loopback receiver.
if CommandLine.arguments.dropFirst().first == "webhooks" {
    let numbers = CommandLine.arguments.dropFirst(2).map { Int($0) }
    let count = numbers.first.flatMap { $0 } ?? 2000
    let accounts = numbers.dropFirst().first.flatMap { $0 } ?? 500
    guard numbers.count <= 2, !numbers.contains(nil), count > 0, accounts > 0 else {
        fail("usage: Benchmarks webhooks [COUNT > 0] [ACCOUNTS > 0]", status: 2)
    }
    failOnError("webhooks") { try runWebhookBenchmark(count: count, accounts: accounts) }
    exit(0)
}

// `Benchmarks upgrade-scale [COUNT] [CLIENTS] [ROUNDS]`: completed upgrades per second through one
// `serve` instance and through two on one PostgreSQL database (UPGRADE_DB=postgres://...).
if CommandLine.arguments.dropFirst().first == "upgrade-scale" {
    let numbers = CommandLine.arguments.dropFirst(2).map { Int($0) }
    let count = numbers.first.flatMap { $0 } ?? 300
    let clients = numbers.dropFirst().first.flatMap { $0 } ?? 4
    let rounds = numbers.dropFirst(2).first.flatMap { $0 } ?? 3
    guard numbers.count <= 3, !numbers.contains(nil), count > 0, (2...64).contains(clients), (1...20).contains(rounds)
    else {
        fail("usage: Benchmarks upgrade-scale [COUNT > 0] [CLIENTS 2...64] [ROUNDS 1...20]", status: 2)
    }
    failOnError("upgrade-scale") { try runUpgradeScaleBenchmark(count: count, clients: clients, rounds: rounds) }
    exit(0)
}

// `Benchmarks transfer [ACCOUNTS] [CONCURRENCY] [ROUNDS]`: accounts per second through
// `upgrade-cli transfer prepare` and `transfer complete` against the emulator, in separate processes.
if CommandLine.arguments.dropFirst().first == "transfer" {
    let numbers = CommandLine.arguments.dropFirst(2).map { Int($0) }
    let accounts = numbers.first.flatMap { $0 } ?? 20_000
    let concurrency = numbers.dropFirst().first.flatMap { $0 } ?? 16
    let rounds = numbers.dropFirst(2).first.flatMap { $0 } ?? 1
    guard numbers.count <= 3, !numbers.contains(nil), (1...1_000_000).contains(accounts),
        TransferBatchOptions.concurrencyRange.contains(concurrency), (1...20).contains(rounds)
    else {
        fail("usage: Benchmarks transfer [ACCOUNTS 1...1000000] [CONCURRENCY 1...64] [ROUNDS 1...20]", status: 2)
    }
    failOnError("transfer") { try runTransferBenchmark(accounts: accounts, concurrency: concurrency, rounds: rounds) }
    exit(0)
}

// `Benchmarks password-costs [RUNS]`: the CPU of one check against the costliest hash the limits
// admit in each format, beside the estimate the failure floor is derived from.
if CommandLine.arguments.dropFirst().first == "password-costs" {
    let numbers = CommandLine.arguments.dropFirst(2).map { Int($0) }
    guard numbers.count <= 1, let runs = numbers.first ?? 3, runs > 0 else {
        fail("usage: Benchmarks password-costs [RUNS > 0]", status: 2)
    }
    runPasswordCostBenchmark(runs: runs)
    exit(0)
}

// `Benchmarks failed-checks [SAMPLES] [--floor MS]`: how long a wrong password takes to be refused
// over HTTP, by what the username holds (unknown, imported legacy hashes, the costliest admitted).
if CommandLine.arguments.dropFirst().first == "failed-checks" {
    var options = Array(CommandLine.arguments.dropFirst(2))
    var floor: Int?
    if let flag = options.firstIndex(of: "--floor") {
        guard flag + 1 < options.count, let value = Int(options[flag + 1]), (0...10_000).contains(value) else {
            fail("usage: Benchmarks failed-checks [SAMPLES > 0] [--floor MS 0...10000]", status: 2)
        }
        floor = value
        options.removeSubrange(flag...(flag + 1))
    }
    let numbers = options.map { Int($0) }
    guard numbers.count <= 1, let samples = numbers.first ?? 9, samples > 0 else {
        fail("usage: Benchmarks failed-checks [SAMPLES > 0] [--floor MS 0...10000]", status: 2)
    }
    failOnError("failed-checks") { try runFailedCheckBenchmark(samples: samples, floorMilliseconds: floor) }
    exit(0)
}

// `Benchmarks legacy-stall [SECONDS] [CLIENTS] [ROUNDS]`: the other routes' throughput, alone and
// while CLIENTS devices sign in to legacy accounts whose legacy login system never answers.
if CommandLine.arguments.dropFirst().first == "legacy-stall" {
    let numbers = CommandLine.arguments.dropFirst(2).map { Int($0) }
    let seconds = numbers.first.flatMap { $0 } ?? 5
    let clients = numbers.dropFirst().first.flatMap { $0 } ?? 16
    let rounds = numbers.dropFirst(2).first.flatMap { $0 } ?? 2
    guard numbers.count <= 3, !numbers.contains(nil), (1...60).contains(seconds), (1...32).contains(clients),
        (1...10).contains(rounds)
    else {
        fail("usage: Benchmarks legacy-stall [SECONDS 1...60] [CLIENTS 1...32] [ROUNDS 1...10]", status: 2)
    }
    failOnError("legacy-stall") {
        try runLegacyStallBenchmark(seconds: Double(seconds), clients: clients, rounds: rounds)
    }
    exit(0)
}

failOnError("primitives") {
    print("siwa-upgrade benchmarks (\(ProcessInfo.processInfo.activeProcessorCount) cores); rates are single-threaded")

    // MARK: HMAC and TOTP

    let key = SecureRandom.bytes(20)
    let message = SecureRandom.bytes(8)
    let hmacRate = measure { _ = Digest.hmac(.sha1, key: key, message: message) }
    report("HMAC-SHA1 (8-byte counter)", hmacRate)
    let totpParameters = TOTPParameters.standard
    let now: Int64 = 1_700_000_000
    let code = TOTP.code(secret: key, parameters: totpParameters, counter: UInt64(now / 30))
    let totpRate = measure {
        _ = TOTP.verify(code: code, secret: key, parameters: totpParameters, now: now, lastAcceptedStep: nil)
    }
    report("TOTP verification (±1 step window: 3 HMACs)", totpRate, relativeTo: ("HMAC", hmacRate))

    // MARK: SQLite

    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-bench-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let store = try SQLiteStore(path: directory.appendingPathComponent("bench.db").path)
    _ = try store.migrate(now: now)
    var counter = 0
    let sqliteCommitRate = try measure(batch: 16) {
        counter += 1
        try store.write { tx in
            try tx.appendAudit(AuditEvent(at: now, accountID: nil, upgradeID: nil, event: "bench.\(counter)"))
        }
    }
    report("SQLite commit (one audit row, WAL, synchronous=FULL)", sqliteCommitRate)
    // What `sqlite:PATH?synchronous=normal` saves: the log's fsync per commit (SQLiteDurability).
    let unsyncedStore = try SQLiteStore(path: directory.appendingPathComponent("normal.db").path, durability: .normal)
    _ = try unsyncedStore.migrate(now: now)
    let unsyncedCommitRate = try measure(batch: 16) {
        counter += 1
        try unsyncedStore.write { tx in
            try tx.appendAudit(AuditEvent(at: now, accountID: nil, upgradeID: nil, event: "bench.\(counter)"))
        }
    }
    report(
        "SQLite commit, synchronous=NORMAL (no fsync per commit)",
        unsyncedCommitRate,
        relativeTo: ("SQLite commit", sqliteCommitRate)
    )

    // MARK: Identity tokens

    try benchmarkIdentityTokens()

    // MARK: Passwords

    let hasher = PasswordHasher()
    let storedHash = try hasher.hash(password: "correct horse battery staple")
    let passwords = PasswordVerifier()
    let argonRate = measure(2, batch: 4) {
        _ = try? passwords.verify(password: "correct horse battery staple", encodedHash: storedHash)
    }
    report("argon2id verify (m=19456 KiB, t=2, p=1)", argonRate)
    let dummyRate = measure(2, batch: 4) { passwords.verifyDummy(password: "unknown user") }
    report("dummy verify for an unknown username", dummyRate, relativeTo: ("argon2id verify", argonRate))
    let outOfBounds = "$2b$31$abcdefghijklmnopqrstuu5s2v8.iXieOjg/.AySBTTZIIVFJeBui"
    let refusalRate = measure { _ = try? passwords.verify(password: "pw", encodedHash: outOfBounds) }
    print(
        String(
            format: "%@ %12.2f µs each",
            "out-of-bounds hash refused (bcrypt cost 31)".padding(toLength: 60, withPad: " ", startingAt: 0),
            1e6 / refusalRate
        )
    )

    // MARK: State machine and committed transitions

    let policy = UpgradePolicy.default
    let machineRate = measure(batch: 256) {
        var machine = UpgradeStateMachine.start(now: now, policy: policy)
        _ = try? machine.apply(.passwordEvaluated(.accepted(secondFactor: true)), now: now)
        _ = try? machine.apply(.stepUpEvaluated(.accepted), now: now)
        _ = try? machine.apply(.appleCredentialEvaluated(.verified(sub: "001234.abc.1234")), now: now)
        _ = try? machine.apply(.authorizationCodeExchanged, now: now)
    }
    report("state machine transitions (4 per upgrade)", machineRate * 4)

    // One committed transition each (`transitionRate`, the same measurement as on PostgreSQL).
    let sqliteTransitionRate = try transitionRate(store, sessions: quick ? 5000 : 20_000, now: now)
    report(
        "committed upgrade transitions (cancel: load+apply+commit)",
        sqliteTransitionRate,
        relativeTo: ("SQLite commit", sqliteCommitRate)
    )

    // MARK: PostgreSQL (when UPGRADE_DB names a PostgreSQL database)

    if let postgres = try benchmarkPostgresStore() {
        let postgresCommitRate = try commitRate(postgres, now: now)
        report("PostgreSQL commit (one audit row, SERIALIZABLE)", postgresCommitRate)
        report(
            "committed upgrade transitions on PostgreSQL (cancel)",
            try transitionRate(postgres, sessions: quick ? 5000 : 20_000, now: now),
            relativeTo: ("PostgreSQL commit", postgresCommitRate)
        )
        // A store of its own, so that its one connection starts with nothing prepared.
        guard let fresh = try benchmarkPostgresStore() else { throw BenchmarkError("UPGRADE_DB went away") }
        let upgrades = quick ? 3 : 20
        let (cold, warm) = try runBlocking { try await postgresTrafficPerUpgrade(fresh, count: upgrades, now: now) }
        func perUpgrade(_ value: Int) -> String { String(format: "%.1f", Double(value) / Double(upgrades)) }
        print(
            "PostgreSQL per completed upgrade without step-up (counted, \(upgrades) upgrades, warm connection): "
                + "\(perUpgrade(warm.roundTrips)) round trips, \(perUpgrade(warm.statements)) statements, "
                + "\(perUpgrade(warm.commits)) commits"
        )
        print("  the first upgrade on a fresh connection: \(cold)")
    }
}

/// Runs async work to its end from synchronous code.
func runBlocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let outcome = Mutex<Result<T, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task {
        let result: Result<T, any Error>
        do { result = .success(try await body()) } catch { result = .failure(error) }
        outcome.withLock { $0 = result }
        done.signal()
    }
    done.wait()
    return try outcome.withLock { $0! }.get()
}

/// The benchmark exchanges no codes.
struct AppleIDEmulatorUnavailable: AppleTokenExchanging {
    func exchangeAuthorizationCode(
        _ code: String,
        clientID: String
    ) async throws(AppleEndpointError) -> AppleTokenResponse {
        throw AppleEndpointError(code: .unavailable, httpStatus: nil, message: "not used by the benchmark")
    }
    func revoke(token: String, clientID: String) async throws(AppleEndpointError) {}
}

/// Ends the run for an expected failure: one line on stderr, exit status `status`.
func fail(_ message: String, status: Int32 = 1) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(status)
}

/// Runs a benchmark; an error it throws ends the run as one line on stderr (a child process's
/// output in the reason joined with " | ") and exit status 1, not as a crash.
func failOnError(_ name: String, _ body: () throws -> Void) {
    do {
        try body()
    } catch {
        fail("\(name): " + "\(error)".split(whereSeparator: \.isNewline).joined(separator: " | "))
    }
}
