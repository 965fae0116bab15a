import Foundation
import Synchronization
import UpgradeEngine

/// Server CPU time per completed upgrade, with and without the password hash.
///
/// Three processes, so CPU is attributed honestly: the Apple ID emulator (`upgrade-cli emulator
/// serve`), the server in production mode (`upgrade-cli serve`, reaching the emulator through the
/// HTTPS client path), and this driver, which plays the device. The server's user+system time is
/// read from /proc before and after `count` upgrades (password → Apple sheet → credential →
/// completed); the CPU time the server's threads spent in the accounts' argon2id hashes (its
/// `password_hash_cpu_seconds_total`) is reported and subtracted. The hashes have the parameters of
/// `PasswordHasher()`, the server's own: a hash with any other parameters is rehashed at its first
/// check (docs/architecture.md), which would add a second key derivation and a write to each
/// upgrade. With `clients` > 1, that many driver threads upgrade different accounts at once, as a
/// server's users do.
func runUpgradeCPUBenchmark(count: Int, clients: Int) throws {
    let binDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        .deletingLastPathComponent()
    let cli = binDirectory.appendingPathComponent("upgrade-cli").path
    guard FileManager.default.isExecutableFile(atPath: cli) else {
        throw BenchmarkError("build upgrade-cli in the same configuration first: swift build -c release")
    }
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-cpu-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let clientID = "com.example.bench"
    let now = Int64(Date().timeIntervalSince1970)

    // Accounts with the server's own hash parameters, written directly, into the PostgreSQL database `UPGRADE_DB` names
    // or a SQLite file of the run's own.
    let database = directory.appendingPathComponent("bench.db").path
    let postgres = try benchmarkPostgresStore()
    let store: any UpgradeStore = try postgres ?? SQLiteStore(path: database)
    if postgres == nil { _ = try store.migrate(now: now) }
    let backend = postgres == nil ? "SQLite" : "PostgreSQL"
    let hasher = PasswordHasher()
    let hashName =
        "argon2id m=\(hasher.parameters.memoryKiB) KiB, t=\(hasher.parameters.iterations), "
        + "p=\(hasher.parameters.parallelism)"
    let warmUps = quick ? 2 : 20
    let total = count + warmUps
    let hash = try hasher.hash(password: "bench-password")
    try store.write { tx in
        for index in 0..<total {
            let account = AccountRecord(
                id: "acct-\(runTag)-\(index)",
                username: "u\(runTag)-\(index)",
                credentialKind: .password,
                createdAt: now,
                updatedAt: now
            )
            try tx.insertAccount(account)
            try tx.upsertPasswordCredential(
                PasswordCredentialRecord(accountID: account.id, hash: hash, format: "argon2id", updatedAt: now)
            )
        }
    }
    let commitCPU = try cpuPerCommit(store)
    let wakeCPU = cpuPerWakeRoundTrip()
    let verifier = PasswordVerifier()
    let hashRate = measure(1, batch: 4) {
        _ = try? verifier.verify(password: "bench-password", encodedHash: hash)
    }
    let secretKey = directory.appendingPathComponent("secret.key")
    try writeSealingKey(
        to: secretKey,
        database: postgres == nil ? database : ProcessInfo.processInfo.environment["UPGRADE_DB"] ?? ""
    )

    // The emulator, then the server pointed at it.
    let keyFile = directory.appendingPathComponent("apple.p8").path
    let emulator = try ChildProcess(
        cli,
        [
            "emulator", "serve", "--port", "0", "--team", "TEAMA12345", "--client-id", clientID, "--private-key-out",
            keyFile,
        ],
        environment: [:],
        readyWhen: "APPLE_BASE_URL="
    )
    defer { emulator.stop() }
    let settings = emulator.output.split(separator: "\n").reduce(into: [String: String]()) { values, line in
        let parts = line.split(separator: "=", maxSplits: 1)
        if parts.count == 2, parts[0].hasPrefix("APPLE_") { values[String(parts[0])] = String(parts[1]) }
    }
    guard let appleBase = settings["APPLE_BASE_URL"] else {
        throw BenchmarkError("the emulator printed no APPLE_BASE_URL")
    }
    var environment = settings
    environment["UPGRADE_DB"] =
        postgres == nil ? "sqlite:" + database : ProcessInfo.processInfo.environment["UPGRADE_DB"]
    environment["UPGRADE_LISTEN"] = "127.0.0.1:0"
    // `/metrics` needs a token on the API listener; the operator's listener serves it without one.
    environment["UPGRADE_HEALTH_LISTEN"] = "127.0.0.1:0"
    environment["UPGRADE_SECRET_KEY_FILE"] = secretKey.path
    // The server logs a JSON line per request. Into a file, as a deployment's log collector would
    // take them: through a pipe, each line would also pay for waking this process's reader.
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
    let base = String(server.output[range].dropFirst("listening on ".count))

    // Each device (driver thread) keeps one connection to the server and one to the emulator.
    struct Device: Sendable {
        let server: LeanHTTPConnection
        let apple: LeanHTTPConnection
    }
    func device() throws -> Device {
        Device(server: try LeanHTTPConnection(base: base), apple: try LeanHTTPConnection(base: appleBase))
    }
    let setup = try device()
    let users = try (0..<total).map { index in
        try setup.apple.post("/emulator/users", ["email": "bench\(index)@example.com"]).json["userId"]?.stringValue
            ?? ""
    }
    /// Wall time of the upgrade's two requests to the server, in nanoseconds: the start (with the
    /// password hash) and the Apple credential (no hash; the code exchange with the emulator).
    struct Latency: Sendable {
        var start: UInt64
        var credential: UInt64
    }
    @Sendable func upgrade(_ index: Int, on device: Device) throws -> Latency {
        let clock = DispatchTime.now().uptimeNanoseconds
        let (_, started) = try device.server.post(
            "/v1/upgrades",
            ["username": "u\(runTag)-\(index)", "password": "bench-password", "serviceIdentifier": "bench"]
        )
        guard let id = started["id"]?.stringValue, let state = started["state"]?.stringValue,
            let nonce = started["nonce"]?.stringValue
        else {
            throw BenchmarkError("unexpected start answer: \(started)")
        }
        let startTime = DispatchTime.now().uptimeNanoseconds - clock
        let authorization = try device.apple.post(
            "/emulator/authorize",
            ["userId": users[index], "clientId": clientID, "nonce": nonce, "state": state]
        ).json
        let credentialSent = DispatchTime.now().uptimeNanoseconds
        let done = try device.server.post(
            "/v1/upgrades/\(id)/apple-credential",
            [
                "identityToken": authorization["identityToken"]?.stringValue ?? "",
                "authorizationCode": authorization["authorizationCode"]?.stringValue ?? "",
                "state": state,
            ]
        ).json
        let credentialTime = DispatchTime.now().uptimeNanoseconds - credentialSent
        guard done["status"]?.stringValue == "completed" else {
            throw BenchmarkError("upgrade \(index) did not complete: \(done)")
        }
        return Latency(start: startTime, credential: credentialTime)
    }
    let devices = try (0..<clients).map { _ in try device() }
    // Warm-up: JWKS fetched, client secret made, caches filled.
    for index in 0..<warmUps { _ = try upgrade(index, on: setup) }
    let hashesBefore = try passwordHashMetrics(metrics)
    let before = try server.cpuSeconds()
    let switchesBefore = server.contextSwitches()
    let othersBefore = (
        driver: processCPUSeconds(), emulator: try emulator.cpuSeconds(), database: postgresServerCPUSeconds()
    )
    let started = DispatchTime.now().uptimeNanoseconds
    let failures = Mutex<[String]>([])
    let latencies = Mutex<[Latency]>([])
    DispatchQueue.concurrentPerform(iterations: clients) { client in
        // Client c upgrades accounts warmUps + c, warmUps + c + clients, ...
        var mine: [Latency] = []
        defer { latencies.withLock { $0 += mine } }
        for index in stride(from: warmUps + client, to: total, by: clients) {
            do {
                mine.append(try upgrade(index, on: devices[client]))
            } catch {
                failures.withLock { $0.append("\(error)") }
                return
            }
        }
    }
    if let failure = failures.withLock({ $0.first }) { throw BenchmarkError(failure) }
    let elapsed = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
    let cpu = try server.cpuSeconds() - before
    let switches = server.contextSwitches() - switchesBefore
    let driverCPU = processCPUSeconds() - othersBefore.driver
    let emulatorCPU = try emulator.cpuSeconds() - othersBefore.emulator
    let databaseCPU = postgresServerCPUSeconds().flatMap { after in othersBefore.database.map { after - $0 } }
    let hashesAfter = try passwordHashMetrics(metrics)
    guard hashesAfter.count - hashesBefore.count == Double(count) else {
        throw BenchmarkError(
            "expected \(count) password checks, the server counted \(hashesAfter.count - hashesBefore.count)"
        )
    }
    let serverHashMilliseconds = (hashesAfter.seconds - hashesBefore.seconds) / Double(count) * 1000
    let perUpgrade = cpu / Double(count) * 1000
    let hashMilliseconds = 1000 / hashRate
    print(
        "server CPU per completed upgrade over HTTP (\(count) upgrades, \(clients) client\(clients == 1 ? "" : "s") "
            + "at once, \(String(format: "%.1f", elapsed)) s wall)"
    )
    print(String(format: "  total                      %7.3f ms", perUpgrade))
    print(
        String(
            format: "  password hash (%@), as the server measured it  %7.3f ms   (%.3f ms in a loop here)",
            hashName,
            serverHashMilliseconds,
            hashMilliseconds
        )
    )
    print(
        String(
            format: "  excluding the password hash %7.3f ms   (the hash: %.1f%% of the server's CPU per upgrade)",
            perUpgrade - serverHashMilliseconds,
            serverHashMilliseconds / perUpgrade * 100
        )
    )
    print(
        String(
            format: "  context switches             %7.1f per upgrade (server threads, voluntary and involuntary)",
            Double(switches) / Double(count)
        )
    )
    print(
        String(
            format: "  (the other processes on these cores: driver %.3f ms, Apple emulator %.3f ms%@ per upgrade)",
            driverCPU / Double(count) * 1000,
            emulatorCPU / Double(count) * 1000,
            databaseCPU.map { String(format: ", PostgreSQL's server processes %.3f ms", $0 / Double(count) * 1000) }
                ?? ""
        )
    )
    // Latency as a device sees it, with `clients` devices at once: the start carries the hash, the
    // credential does not (its time includes the server's code exchange with the emulator).
    let measured = latencies.withLock { $0 }
    for (label, values) in [
        ("start (with the hash)", measured.map(\.start)),
        ("Apple credential (no hash)", measured.map(\.credential)),
        ("both requests", measured.map { $0.start + $0.credential }),
    ] {
        let sorted = values.sorted()
        func percentile(_ p: Double) -> Double {
            Double(sorted[min(sorted.count - 1, Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1)]) / 1e6
        }
        print(
            String(
                format: "  latency %@ p50 %7.2f ms   p99 %7.2f ms   p99.9 %7.2f ms",
                label.padding(toLength: 28, withPad: " ", startingAt: 0),
                percentile(50),
                percentile(99),
                percentile(99.9)
            )
        )
    }
    let excluded = (perUpgrade - serverHashMilliseconds) / 1000
    print(
        String(
            format: "  = %.1f× the CPU of one %@ commit (%.0f µs), = %.1f× one thread wake-up round trip (%.0f µs)",
            excluded / commitCPU,
            backend,
            commitCPU * 1e6,
            excluded / wakeCPU,
            wakeCPU * 1e6
        )
    )
    // The hash is pure computation measured in the same server during the same run, so this ratio
    // holds still while the machine's speed moves (it moved by 40% within an hour here).
    print(
        String(
            format: "  = %.2f× the CPU of the password hash in the server (%.3f ms)",
            (perUpgrade - serverHashMilliseconds) / serverHashMilliseconds,
            serverHashMilliseconds
        )
    )
}

/// Writes the sealing key a benchmark's server runs with (mode 0600): derived from the database
/// it runs on, so that runs sharing a PostgreSQL database (`UPGRADE_DB`, kept between benchmarks)
/// share the key their values were sealed with, as a key id names one key for good
/// (docs/architecture.md §10.4); a throwaway SQLite file gets a key of its own. Test data only.
func writeSealingKey(to url: URL, database: String) throws {
    try Data(Digest.sha256("siwa-upgrade benchmark sealing key: " + database)).write(to: url)
    try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: url.path)
}

/// Where a `serve` started with `UPGRADE_HEALTH_LISTEN` serves `/metrics` without a token, from
/// the line it prints once listening.
func metricsBase(_ output: String) throws -> String {
    guard let range = output.range(of: #"health checks on http://127\.0\.0\.1:[0-9]+"#, options: .regularExpression)
    else {
        throw BenchmarkError("the server printed no health listener")
    }
    return String(output[range].dropFirst("health checks on ".count))
}

/// The server's password-hash counters from `/metrics`: how many key derivations, and the CPU
/// seconds their threads spent (`password_hashes_total`, `password_hash_cpu_seconds_total`).
func passwordHashMetrics(_ connection: LeanHTTPConnection) throws -> (count: Double, seconds: Double) {
    let (status, body) = try connection.get("/metrics")
    guard status == 200 else { throw BenchmarkError("GET /metrics answered \(status)") }
    var values: [String: Double] = [:]
    for line in String(decoding: body, as: UTF8.self).split(separator: "\n") where !line.hasPrefix("#") {
        let parts = line.split(separator: " ")
        if parts.count == 2, let value = Double(parts[1]) { values[String(parts[0])] = value }
    }
    guard let count = values["password_hashes_total"], let seconds = values["password_hash_cpu_seconds_total"] else {
        throw BenchmarkError("the server's /metrics has no password hash counters")
    }
    return (count, seconds)
}

/// This process's user+system CPU seconds.
func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

/// CPU seconds per committed one-row transaction (an audit row, as each upgrade transition writes):
/// this process's, plus PostgreSQL's server processes' when they can be found.
func cpuPerCommit(_ store: any UpgradeStore) throws -> Double {
    let count = quick ? 100 : 2000
    let before = (processCPUSeconds(), postgresServerCPUSeconds() ?? 0)
    for index in 0..<count {
        try store.write { tx in
            try tx.appendAudit(AuditEvent(at: 0, accountID: nil, upgradeID: nil, event: "bench.commit.\(index)"))
        }
    }
    let server = (postgresServerCPUSeconds() ?? 0) - before.1
    return (processCPUSeconds() - before.0 + server) / Double(count)
}

/// User plus system CPU seconds of the PostgreSQL cluster that `Scripts/dev-postgres` started
/// (`UPGRADE_DEV_POSTGRES_DIR`): its postmaster and the processes it forked, those alive now and
/// those that ended (the postmaster waited for them, so their time is in its children's time: a
/// batch CLI's connections end with it). Nil without that directory.
func postgresServerCPUSeconds() -> Double? {
    guard let directory = ProcessInfo.processInfo.environment["UPGRADE_DEV_POSTGRES_DIR"],
        let pidFile = try? String(contentsOfFile: directory + "/data/postmaster.pid", encoding: .utf8),
        let postmaster = pidFile.split(separator: "\n").first.flatMap({ Int($0) })
    else { return nil }
    var total = 0.0
    for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
        guard let pid = Int(entry),
            let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { continue }
        // After the command name: state, ppid, ... utime (index 11) and stime (index 12).
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 14, pid == postmaster || Int(fields[1]) == postmaster,
            let user = Double(fields[11]), let system = Double(fields[12])
        else { continue }
        total += (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
        // cutime and cstime: the ended server processes the postmaster waited for.
        if pid == postmaster, let children = Double(fields[13]), let childrenSystem = Double(fields[14]) {
            total += (children + childrenSystem) / Double(sysconf(Int32(_SC_CLK_TCK)))
        }
    }
    return total
}

/// CPU seconds for one thread to wake a sleeping thread and be woken back (two semaphores), the
/// hand-off the server makes between its event loop and a worker, and back, for each request.
func cpuPerWakeRoundTrip() -> Double {
    let count = quick ? 1000 : 20_000
    let ping = DispatchSemaphore(value: 0)
    let pong = DispatchSemaphore(value: 0)
    let done = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
        for _ in 0..<count {
            ping.wait()
            pong.signal()
        }
        done.signal()
    }
    let before = processCPUSeconds()
    for _ in 0..<count {
        ping.signal()
        pong.wait()
    }
    let cpu = processCPUSeconds() - before
    done.wait()
    return cpu / Double(count)
}

struct BenchmarkError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A child process whose combined output (through a pipe, or into `logFile`) is read until a
/// marker appears. A benchmark interrupted with SIGINT or SIGTERM (Ctrl-C, `timeout`) stops the
/// children still running before it exits, so no emulator or `serve` outlives it.
final class ChildProcess {
    let process = Process()
    private(set) var output = ""
    private let pipe = Pipe()

    /// The children started and not yet stopped, by process id.
    private static let running = Mutex<Set<Int32>>([])
    /// The signal sources, kept alive for the run; created with the first child.
    private static let interruptions = Mutex<[any DispatchSourceSignal]>([])

    /// On SIGINT or SIGTERM: SIGTERM to every running child, a short wait, then exit 128 + signal.
    private static func stopChildrenOnInterrupt() {
        interruptions.withLock { sources in
            guard sources.isEmpty else { return }
            for signalNumber in [SIGINT, SIGTERM] {
                signal(signalNumber, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
                source.setEventHandler {
                    let children = running.withLock { $0 }
                    for pid in children { kill(pid, SIGTERM) }
                    let deadline = Date().addingTimeInterval(5)
                    while Date() < deadline, children.contains(where: { kill($0, 0) == 0 }) { usleep(50_000) }
                    for pid in children where kill(pid, 0) == 0 { kill(pid, SIGKILL) }
                    let message = "interrupted: stopped \(children.count) child processes\n"
                    FileHandle.standardError.write(Data(message.utf8))
                    exit(128 + signalNumber)
                }
                source.resume()
                sources.append(source)
            }
        }
    }

    init(
        _ executable: String,
        _ arguments: [String],
        environment: [String: String],
        readyWhen marker: String,
        logFile: URL? = nil
    ) throws {
        // BENCH_SERVER_WRAPPER runs the server under another program, for profiling, e.g.
        // "/usr/bin/valgrind --tool=callgrind --callgrind-out-file=/tmp/server.callgrind".
        if arguments.first == "serve", let wrap = ProcessInfo.processInfo.environment["BENCH_SERVER_WRAPPER"] {
            let words = wrap.split(separator: " ").map(String.init)
            process.executableURL = URL(fileURLWithPath: words[0])
            process.arguments = Array(words.dropFirst()) + [executable] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
        }
        process.environment = ["PATH": "/usr/bin:/bin"].merging(environment) { $1 }
        // The output so far: the whole log file, or the pipe's next chunk added to what was read.
        let readMore: () -> Void
        if let logFile {
            _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
            let handle = try FileHandle(forWritingTo: logFile)
            process.standardOutput = handle
            process.standardError = handle
            readMore = { [unowned self] in
                Thread.sleep(forTimeInterval: 0.05)
                output = (try? String(contentsOf: logFile, encoding: .utf8)) ?? ""
            }
        } else {
            process.standardOutput = pipe
            process.standardError = pipe
            readMore = { [unowned self] in
                output += String(decoding: pipe.fileHandleForReading.availableData, as: UTF8.self)
            }
        }
        Self.stopChildrenOnInterrupt()
        try process.run()
        let pid = process.processIdentifier
        Self.running.withLock { _ = $0.insert(pid) }
        let deadline = Date().addingTimeInterval(20)
        while !output.contains(marker) {
            guard Date() < deadline, process.isRunning else {
                throw BenchmarkError("\(arguments.prefix(2).joined(separator: " ")) did not start: \(output)")
            }
            readMore()
        }
        guard logFile == nil else { return }
        // Keep reading so the child never blocks on a full pipe.
        let handle = pipe.fileHandleForReading
        Thread.detachNewThread { while !handle.availableData.isEmpty {} }
    }

    /// User plus system CPU seconds, from /proc/PID/stat (fields 14 and 15, in clock ticks).
    func cpuSeconds() throws -> Double {
        let stat = try String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8)
        guard let close = stat.lastIndex(of: ")") else { throw BenchmarkError("unreadable /proc stat") }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the command name, field 3 (state) is index 0, so utime (14) and stime (15) are 11 and 12.
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else {
            throw BenchmarkError("unreadable /proc stat")
        }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Context switches of all the process's threads so far, voluntary and involuntary, from
    /// /proc/PID/task/*/status. (A thread that exits in between takes its count with it.)
    func contextSwitches() -> Int {
        let tasks = "/proc/\(process.processIdentifier)/task"
        var total = 0
        for thread in (try? FileManager.default.contentsOfDirectory(atPath: tasks)) ?? [] {
            let status = (try? String(contentsOfFile: "\(tasks)/\(thread)/status", encoding: .utf8)) ?? ""
            for line in status.split(separator: "\n")
            where line.hasPrefix("voluntary_ctxt_switches:") || line.hasPrefix("nonvoluntary_ctxt_switches:") {
                total += Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) ?? 0
            }
        }
        return total
    }

    func stop() {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        let pid = process.processIdentifier
        Self.running.withLock { _ = $0.remove(pid) }
    }
}
