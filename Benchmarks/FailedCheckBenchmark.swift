import Foundation
import Synchronization
import UpgradeEngine

/// The calling thread's CPU time so far.
func threadCPUSeconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

func milliseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
}

/// The median CPU time of `runs` wrong-password checks of `sample` on this thread; nil if the
/// verifier refuses the hash (it would not be admitted).
func checkCPUSeconds(_ sample: CostliestHash, _ verifier: PasswordVerifier, runs: Int) -> Double? {
    guard (try? verifier.inspect(sample.hash)) != nil else { return nil }
    var cpu: [Double] = []
    for _ in 0..<runs {
        let started = threadCPUSeconds()
        _ = try? verifier.verify(password: sample.password, encodedHash: sample.hash)
        cpu.append(threadCPUSeconds() - started)
    }
    return median(cpu)
}

/// `Benchmarks password-costs [RUNS]`: the CPU time of one wrong-password check against the costliest
/// hash the default limits admit in each format, on one thread of this process, beside the estimate
/// `PasswordHashLimits` derives its failure floor from.
func runPasswordCostBenchmark(runs: Int) {
    let limits = PasswordHashLimits.default
    let verifier = PasswordVerifier(limits: limits)
    print("costliest admitted check per format, CPU of one thread here (median of \(runs)), with the limits' estimate")
    for sample in CostliestHash.all(limits).prefix(quick ? 2 : Int.max) {
        guard let cpu = checkCPUSeconds(sample, verifier, runs: runs) else {
            print("\(sample.name): not admitted by the limits (the benchmark's hash is wrong)")
            continue
        }
        print(
            "  \(sample.name.padding(toLength: 64, withPad: " ", startingAt: 0)) "
                + String(format: "%7.1f ms", cpu * 1000)
        )
    }
    for (format, cost) in limits.costliestChecks {
        print(
            "  estimate: \(format.padding(toLength: 54, withPad: " ", startingAt: 0)) "
                + String(format: "%7.0f ms", milliseconds(cost))
        )
    }
    print(
        String(
            format: "  costliest estimate %.0f ms; failure floor %.0f ms",
            milliseconds(limits.costliestCheck),
            milliseconds(limits.failureFloor)
        )
    )
}

/// `Benchmarks failed-checks [SAMPLES] [--floor MS]`: how long a wrong password takes to be refused
/// over HTTP, by what the username holds: nothing (unknown), an Apple-only account, a hash that
/// cannot be checked, imported bcrypt 12 and Django PBKDF2-SHA256 600 000, and the costliest hash
/// the limits admit in each format. Three processes as for `upgrade-cpu`: the Apple ID emulator, the
/// server in production mode (`upgrade-cli serve`, its failure floor the default or `--floor`), and
/// this driver on one keep-alive connection. Each account is asked once, so no lockout delays an
/// answer; the client throttle is off. Categories take turns within each round, so a change in the
/// machine's load touches them alike. Prints each category's check CPU (in this process, for
/// reference) and its median answer time, and that median against the unknown username's.
func runFailedCheckBenchmark(samples: Int, floorMilliseconds: Int?) throws {
    let binDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        .deletingLastPathComponent()
    let cli = binDirectory.appendingPathComponent("upgrade-cli").path
    guard FileManager.default.isExecutableFile(atPath: cli) else {
        throw BenchmarkError("build upgrade-cli in the same configuration first: swift build -c release")
    }
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-failed-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let now = Int64(Date().timeIntervalSince1970)

    // What each category's accounts hold; nil: no account (an unknown username).
    struct Category {
        let name: String
        let hash: String?
        let password: String
        var appleOnly = false
    }
    let limits = PasswordHashLimits.default
    let short = CostliestHash.shortPassword
    var categories = [
        Category(name: "unknown username (dummy argon2id)", hash: nil, password: short),
        Category(name: "Apple-only account (no password)", hash: nil, password: short, appleOnly: true),
        Category(
            name: "stored hash over the limits (bcrypt 14)",
            hash: CostliestHash.bcrypt(cost: 14),
            password: short
        ),
        Category(name: "imported bcrypt cost 12", hash: CostliestHash.bcrypt(cost: 12), password: short),
        Category(
            name: "imported Django PBKDF2-SHA256 600000",
            hash: "pbkdf2_sha256$600000$b9MbjyN8pQZ2$5YEobhtTE5FsyUbax4iIaxvxczCiyP+34JC+sch61yE=",
            password: short
        ),
    ]
    for sample in CostliestHash.all(limits).prefix(quick ? 2 : Int.max) {
        categories.append(Category(name: "costliest: \(sample.name)", hash: sample.hash, password: sample.password))
    }

    // Rounds of simultaneous guesses for one username, after the samples (each on accounts of its own).
    let simultaneousRounds = quick ? 1 : 5

    // The accounts, written directly into the server's SQLite file.
    let database = directory.appendingPathComponent("bench.db").path
    let store = try SQLiteStore(path: database)
    _ = try store.migrate(now: now)
    let verifier = PasswordVerifier()
    try store.write { tx in
        for (index, category) in categories.enumerated() where category.hash != nil || category.appleOnly {
            for sample in 0...(samples + simultaneousRounds) {
                let account = AccountRecord(
                    id: "acct-\(runTag)-\(index)-\(sample)",
                    username: "u\(runTag)-\(index)-\(sample)",
                    credentialKind: category.appleOnly ? .appleOnly : .password,
                    createdAt: now,
                    updatedAt: now
                )
                try tx.insertAccount(account)
                if let hash = category.hash {
                    let format = (try? verifier.inspect(hash).format.rawValue) ?? "bcrypt"
                    try tx.upsertPasswordCredential(
                        PasswordCredentialRecord(accountID: account.id, hash: hash, format: format, updatedAt: now)
                    )
                }
            }
        }
    }
    let secretKey = directory.appendingPathComponent("secret.key")
    try Data(SecureRandom.bytes(32)).write(to: secretKey)
    try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: secretKey.path)

    let keyFile = directory.appendingPathComponent("apple.p8").path
    let emulator = try ChildProcess(
        cli,
        [
            "emulator", "serve", "--port", "0", "--team", "TEAMA12345", "--client-id", "com.example.bench",
            "--private-key-out", keyFile,
        ],
        environment: [:],
        readyWhen: "APPLE_BASE_URL="
    )
    defer { emulator.stop() }
    var environment = emulator.output.split(separator: "\n").reduce(into: [String: String]()) { values, line in
        let parts = line.split(separator: "=", maxSplits: 1)
        if parts.count == 2, parts[0].hasPrefix("APPLE_") { values[String(parts[0])] = String(parts[1]) }
    }
    environment["UPGRADE_DB"] = "sqlite:" + database
    environment["UPGRADE_LISTEN"] = "127.0.0.1:0"
    // `/metrics` needs a token on the API listener; the operator's listener serves it without one.
    environment["UPGRADE_HEALTH_LISTEN"] = "127.0.0.1:0"
    environment["UPGRADE_SECRET_KEY_FILE"] = secretKey.path
    environment["UPGRADE_CLIENT_THROTTLE"] = "off"
    if let floorMilliseconds { environment["UPGRADE_FAILURE_FLOOR_MS"] = String(floorMilliseconds) }
    let server = try ChildProcess(
        cli,
        ["serve"],
        environment: environment,
        readyWhen: "health checks on http://",
        logFile: directory.appendingPathComponent("server.log")
    )
    defer { server.stop() }
    let metrics = try LeanHTTPConnection(base: try metricsBase(server.output))
    guard let range = server.output.range(of: #"listening on http://127\.0\.0\.1:[0-9]+"#, options: .regularExpression)
    else {
        throw BenchmarkError("the server printed no address")
    }
    let connection = try LeanHTTPConnection(base: String(server.output[range].dropFirst("listening on ".count)))

    func refuse(_ index: Int, _ sample: Int) throws -> Double {
        let category = categories[index]
        let username =
            category.hash == nil && !category.appleOnly ? "nobody-\(runTag)-\(sample)" : "u\(runTag)-\(index)-\(sample)"
        let started = DispatchTime.now().uptimeNanoseconds
        let (status, answer) = try connection.post(
            "/v1/upgrades",
            ["username": username, "password": category.password, "serviceIdentifier": "bench"]
        )
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        guard status == 401, answer["type"]?.stringValue?.hasSuffix("/invalid-credentials") == true else {
            throw BenchmarkError("\(category.name): expected 401 invalid-credentials, got \(status) \(answer)")
        }
        return elapsed
    }
    // Warm-up: the first answers pay for connections, caches and the dummy's first allocation.
    for index in categories.indices { _ = try refuse(index, samples) }
    var latencies = [[Double]](repeating: [], count: categories.count)
    for sample in 0..<samples {
        for index in categories.indices { latencies[index].append(try refuse(index, sample)) }
    }

    let floor =
        floorMilliseconds.map { "\($0) ms (UPGRADE_FAILURE_FLOOR_MS)" } ?? "the default, derived from the limits"
    print("wrong password over HTTP, by what the username holds (\(samples) samples each, median; floor \(floor))")
    print(
        "  \("what the username holds".padding(toLength: 76, withPad: " ", startingAt: 0))  check CPU here   answer"
            + "   × unknown"
    )
    let unknownMedian = median(latencies[0])
    var ratios: [Double] = []
    var cpus = [Double?](repeating: nil, count: categories.count)
    for (index, category) in categories.enumerated() {
        let cpu: Double?
        if let hash = category.hash {
            cpu = checkCPUSeconds(
                CostliestHash(name: "", hash: hash, password: category.password),
                verifier,
                runs: quick ? 1 : 3
            )
        } else {
            let started = threadCPUSeconds()
            verifier.verifyDummy(password: category.password)
            cpu = threadCPUSeconds() - started
        }
        cpus[index] = cpu
        let answer = median(latencies[index])
        ratios.append(answer / unknownMedian)
        print(
            "  \(category.name.padding(toLength: 76, withPad: " ", startingAt: 0)) "
                + (cpu.map { String(format: "%9.1f ms", $0 * 1000) } ?? "  refused  ")
                + String(format: "  %7.1f ms  %6.3f", answer * 1000, answer / unknownMedian)
        )
    }
    let spread = (ratios.max() ?? 1) / (ratios.min() ?? 1)
    print(
        String(
            format: "  slowest median / fastest median: %.3f (%@ 1.20)",
            spread,
            spread <= 1.2 ? "within" : "NOT within"
        )
    )

    // Four wrong passwords at once for one username, on four connections (docs/architecture.md
    // §10.3): for the costliest category they used to share the cores and overrun the floor. Now one
    // is checked and the others are refused `rate-limited` at once, alike for an unknown username.
    let costliest = categories.indices.dropFirst().max { cpus[$0] ?? 0 < cpus[$1] ?? 0 } ?? 0
    let base = String(server.output[range].dropFirst("listening on ".count))
    func overruns() throws -> Int {
        let text = String(decoding: try metrics.get("/metrics").body, as: UTF8.self)
        let line = text.split(separator: "\n").first { $0.hasPrefix("credential_failure_floor_overruns_total ") }
        return Int(line?.split(separator: " ").last ?? "") ?? -1
    }
    let overrunsBefore = try overruns()
    print("four wrong passwords at once for one username, \(simultaneousRounds) round(s) each, medians")
    for index in [0, costliest] {
        var checked: [Double] = []
        var refused: [Double] = []
        var other: [Int] = []
        for round in 0..<simultaneousRounds {
            let sample = samples + 1 + round
            let category = categories[index]
            let username = index == 0 ? "nobody-\(runTag)-\(sample)" : "u\(runTag)-\(index)-\(sample)"
            let connections = try (0..<4).map { _ in try LeanHTTPConnection(base: base) }
            let answers = Mutex<[(Int, Double)]>([])
            DispatchQueue.concurrentPerform(iterations: 4) { client in
                let started = DispatchTime.now().uptimeNanoseconds
                let status =
                    (try? connections[client].post(
                        "/v1/upgrades",
                        ["username": username, "password": category.password, "serviceIdentifier": "bench"]
                    ).status) ?? 0
                let elapsed = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
                answers.withLock { $0.append((status, elapsed)) }
            }
            for (status, elapsed) in answers.withLock({ $0 }) {
                switch status {
                case 401: checked.append(elapsed)
                case 429: refused.append(elapsed)
                default: other.append(status)
                }
            }
        }
        print(
            "  \(categories[index].name.padding(toLength: 60, withPad: " ", startingAt: 0)) "
                + "checked \(checked.count) of \(4 * simultaneousRounds)"
                + (checked.isEmpty ? "" : String(format: " (%.1f ms)", median(checked) * 1000))
                + ", 429 \(refused.count)"
                + (refused.isEmpty ? "" : String(format: " (%.1f ms)", median(refused) * 1000))
                + (other.isEmpty ? "" : ", other \(other)")
        )
    }
    print("  failure-floor overruns during these rounds: \(try overruns() - overrunsBefore)")
}
