import Foundation
import Synchronization
import UpgradeEngine

/// Completed upgrades per second through one `serve` instance and through two, on one PostgreSQL
/// database (`UPGRADE_DB`), in the same run: the Apple ID emulator, two servers started alike, and
/// this driver with `clients` devices upgrading different accounts at once, all of them on the one
/// server, or half on each. Each round measures both, in alternating order, `count` upgrades each.
func runUpgradeScaleBenchmark(count: Int, clients: Int, rounds: Int) throws {
    guard let store = try benchmarkPostgresStore() else {
        throw BenchmarkError("needs UPGRADE_DB=postgres://...: the two servers share one database")
    }
    let binDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        .deletingLastPathComponent()
    let cli = binDirectory.appendingPathComponent("upgrade-cli").path
    guard FileManager.default.isExecutableFile(atPath: cli) else {
        throw BenchmarkError("build upgrade-cli in the same configuration first: swift build -c release")
    }
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-scale-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let clientID = "com.example.bench"
    let now = Int64(Date().timeIntervalSince1970)

    let warmUps = 10
    let total = 2 * warmUps + rounds * 2 * count
    // The server's own parameters: any other hash would be rehashed, and written, at its first check.
    let hash = try PasswordHasher().hash(password: "bench-password")
    for start in stride(from: 0, to: total, by: 1000) {
        try store.write { tx in
            for index in start..<min(total, start + 1000) {
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
    }
    let secretKey = directory.appendingPathComponent("secret.key")
    try writeSealingKey(to: secretKey, database: ProcessInfo.processInfo.environment["UPGRADE_DB"] ?? "")

    let emulator = try ChildProcess(
        cli,
        [
            "emulator", "serve", "--port", "0", "--team", "TEAMA12345", "--client-id", clientID, "--private-key-out",
            directory.appendingPathComponent("apple.p8").path,
        ],
        environment: [:],
        readyWhen: "APPLE_BASE_URL="
    )
    defer { emulator.stop() }
    var environment = emulator.output.split(separator: "\n").reduce(into: [String: String]()) { values, line in
        let parts = line.split(separator: "=", maxSplits: 1)
        if parts.count == 2, parts[0].hasPrefix("APPLE_") { values[String(parts[0])] = String(parts[1]) }
    }
    guard let appleBase = environment["APPLE_BASE_URL"] else {
        throw BenchmarkError("the emulator printed no APPLE_BASE_URL")
    }
    environment["UPGRADE_DB"] = ProcessInfo.processInfo.environment["UPGRADE_DB"]
    environment["UPGRADE_LISTEN"] = "127.0.0.1:0"
    environment["UPGRADE_SECRET_KEY_FILE"] = secretKey.path
    let servers = try (0..<2).map { index in
        try ChildProcess(
            cli,
            ["serve"],
            environment: environment,
            readyWhen: "listening on http://",
            logFile: directory.appendingPathComponent("server\(index).log")
        )
    }
    defer { for server in servers { server.stop() } }
    let bases = try servers.map { server in
        guard
            let range = server.output.range(
                of: #"listening on http://127\.0\.0\.1:[0-9]+"#,
                options: .regularExpression
            )
        else { throw BenchmarkError("a server printed no address") }
        return String(server.output[range].dropFirst("listening on ".count))
    }

    struct Device: Sendable {
        let server: LeanHTTPConnection
        let apple: LeanHTTPConnection
    }
    let setup = Device(server: try LeanHTTPConnection(base: bases[0]), apple: try LeanHTTPConnection(base: appleBase))
    let users = try (0..<total).map { index in
        try setup.apple.post("/emulator/users", ["email": "scale\(index)@example.com"]).json["userId"]?.stringValue
            ?? ""
    }
    @Sendable func upgrade(_ index: Int, on device: Device) throws {
        let (_, started) = try device.server.post(
            "/v1/upgrades",
            ["username": "u\(runTag)-\(index)", "password": "bench-password", "serviceIdentifier": "bench"]
        )
        guard let id = started["id"]?.stringValue, let state = started["state"]?.stringValue,
            let nonce = started["nonce"]?.stringValue
        else { throw BenchmarkError("unexpected start answer: \(started)") }
        let authorization = try device.apple.post(
            "/emulator/authorize",
            ["userId": users[index], "clientId": clientID, "nonce": nonce, "state": state]
        ).json
        let done = try device.server.post(
            "/v1/upgrades/\(id)/apple-credential",
            [
                "identityToken": authorization["identityToken"]?.stringValue ?? "",
                "authorizationCode": authorization["authorizationCode"]?.stringValue ?? "",
                "state": state,
            ]
        ).json
        guard done["status"]?.stringValue == "completed" else {
            throw BenchmarkError("upgrade \(index) did not complete: \(done)")
        }
    }
    // Warm-up on each server: JWKS fetched, client secret made, connections opened and prepared.
    for (server, base) in bases.enumerated() {
        let device = Device(server: try LeanHTTPConnection(base: base), apple: setup.apple)
        for index in 0..<warmUps { try upgrade(server * warmUps + index, on: device) }
    }

    var next = 2 * warmUps
    /// Upgrades per second of `count` upgrades over `instances` servers.
    func phase(instances: Int) throws -> Double {
        let devices = try (0..<clients).map { client in
            Device(
                server: try LeanHTTPConnection(base: bases[client % instances]),
                apple: try LeanHTTPConnection(base: appleBase)
            )
        }
        let first = next
        next += count
        let failures = Mutex<[String]>([])
        let started = DispatchTime.now().uptimeNanoseconds
        DispatchQueue.concurrentPerform(iterations: clients) { client in
            for index in stride(from: first + client, to: first + count, by: clients) {
                do {
                    try upgrade(index, on: devices[client])
                } catch {
                    failures.withLock { $0.append("\(error)") }
                    return
                }
            }
        }
        if let failure = failures.withLock({ $0.first }) { throw BenchmarkError(failure) }
        return Double(count) / (Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9)
    }
    var one: [Double] = []
    var two: [Double] = []
    print("completed upgrades per second on one PostgreSQL database (\(count) upgrades a phase, \(clients) clients)")
    for round in 0..<rounds {
        // Alternating order, so that a drift in the machine's speed favours neither.
        for instances in round % 2 == 0 ? [1, 2] : [2, 1] {
            let rate = try phase(instances: instances)
            if instances == 1 { one.append(rate) } else { two.append(rate) }
            print(
                String(
                    format: "  round %d, %d instance%@: %7.1f /s",
                    round + 1,
                    instances,
                    instances == 1 ? "" : "s",
                    rate
                )
            )
        }
    }
    func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.count % 2 == 1
            ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }
    print(
        String(
            format: "  median: one instance %.1f /s, two instances %.1f /s = %.2f× one",
            median(one),
            median(two),
            median(two) / median(one)
        )
    )
}
