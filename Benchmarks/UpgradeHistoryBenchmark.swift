import Foundation
import UpgradeEngine

/// `Benchmarks upgrade-history [PAST] [ROUNDS] [--db postgres://...]` (PostgreSQL from `--db` or
/// `UPGRADE_DB`, SQLite always); returns the exit code: 2 for bad arguments, 1 for a failed run.
func upgradeHistoryCommand(_ arguments: [String]) -> Int32 {
    guard
        let (numbers, database) = bothBackendsArguments(
            arguments,
            command: "upgrade-history",
            maxNumbers: 2,
            usage: "Benchmarks upgrade-history [PAST > 0] [ROUNDS > 0] [--db postgres://...]"
        )
    else { return 2 }
    do {
        try runUpgradeHistoryBenchmark(
            past: numbers.first ?? 10_000,
            rounds: numbers.dropFirst().first ?? 1000,
            database: database
        )
        return 0
    } catch {
        print("upgrade-history: \(error)")
        return 1
    }
}

/// CPU and wall time per upgrade for an account with a long history against a fresh account, on
/// SQLite and, given a PostgreSQL database, on PostgreSQL (docs/architecture.md §8). The history is
/// seeded through the store: `past` ended upgrades (failed, cancelled, expired, superseded) with
/// their audit rows, a password change ended every tenth, and an `upgrade.failed` webhook for each
/// failed one. Each measured upgrade is what an attacker who knows the username repeats and what
/// reads the account's history: a start whose password is accepted (it ends the account's open
/// upgrades), then the user's cancel. The accounts' hashes are cheap, so the reads are not hidden
/// behind the hash. Rounds alternate between the two accounts in blocks.
func runUpgradeHistoryBenchmark(past: Int, rounds: Int, database: String?) throws {
    try onBothBackends("history", database: database) { store, backend in
        var databasePIDs: () -> [Int32] = { [] }
        if backend == "PostgreSQL" {
            // The database's own CPU counts too: the reads run in its backends. Found through the
            // cluster's postmaster.pid when UPGRADE_DEV_POSTGRES_DIR names a `Scripts/dev-postgres` cluster.
            let postmaster = ProcessInfo.processInfo.environment["UPGRADE_DEV_POSTGRES_DIR"].flatMap { dir in
                (try? String(contentsOfFile: dir + "/data/postmaster.pid", encoding: .utf8))?
                    .split(separator: "\n").first.flatMap { Int32($0) }
            }
            if postmaster == nil {
                print("PostgreSQL: the database's CPU is not counted (set UPGRADE_DEV_POSTGRES_DIR to count it)")
            }
            databasePIDs = { postmaster.map(childProcesses(of:)) ?? [] }
        }
        try HistoryRun(store: store, backend: backend, past: past, rounds: rounds, databasePIDs: databasePIDs).run()
    }
}

private struct HistoryRun {
    let store: any UpgradeStore
    let backend: String
    let past: Int
    let rounds: Int
    /// The database server's processes whose CPU is added to this process's.
    let databasePIDs: () -> [Int32]

    func run() throws {
        let now = Int64(Date().timeIntervalSince1970)
        let cheap = PasswordHasher.Parameters(memoryKiB: 256, iterations: 1, parallelism: 1)
        let hash = try PasswordHasher(parameters: cheap).hash(password: "pw")
        var configuration = UpgradeServiceConfiguration(appleTeamID: "TEAMA12345")
        configuration.passwordHasher = try PasswordHasher(parameters: cheap)
        let service = UpgradeService(
            store: store,
            passwords: PasswordVerifier(dummyParameters: cheap),
            secrets: SecretBox.developmentOnly(),
            identityTokens: IdentityTokenVerifier(
                keys: try JWKSet(keys: [("k", try RSAPrivateKey(generatingBits: 2048).publicKey)]),
                policy: try IdentityTokenPolicy(allowedAudiences: ["com.example.app"])
            ),
            apple: AppleIDEmulatorUnavailable(),
            configuration: configuration
        )
        let tag = String(UUID().uuidString.prefix(8)).lowercased()
        let fresh = "fresh-\(tag)"
        let history = "history-\(tag)"
        let seedStart = DispatchTime.now().uptimeNanoseconds
        for username in [fresh, history] {
            try store.write { tx in
                try tx.insertAccount(
                    AccountRecord(
                        id: "acct-\(username)",
                        username: username,
                        credentialKind: .password,
                        createdAt: now,
                        updatedAt: now
                    )
                )
                try tx.upsertPasswordCredential(
                    PasswordCredentialRecord(
                        accountID: "acct-\(username)",
                        hash: hash,
                        format: "argon2id",
                        updatedAt: now
                    )
                )
            }
        }
        try seedHistory(accountID: "acct-\(history)", usernameKey: history, now: now)
        let seeded = Double(DispatchTime.now().uptimeNanoseconds - seedStart) / 1e9

        func upgrade(_ username: String) throws {
            let started = try service.start(username: username, password: "pw", serviceIdentifier: "s", now: now)
            guard started.status == .awaitingAppleCredential else {
                throw BenchmarkError("\(backend): the start of \(username) answered \(started.status)")
            }
            _ = try service.cancel(id: started.id, reason: .userCanceled, now: now)
        }
        // Warm-up: statements prepared, pages cached, for both accounts.
        for _ in 0..<20 {
            try upgrade(fresh)
            try upgrade(history)
        }
        var cost = [fresh: Cost(), history: Cost()]
        let block = 25
        var done = 0
        while done < rounds {
            let count = min(block, rounds - done)
            for username in done / block % 2 == 0 ? [fresh, history] : [history, fresh] {
                let before = Cost.now(databasePIDs())
                for _ in 0..<count { try upgrade(username) }
                cost[username, default: Cost()].add(Cost.now(databasePIDs()).minus(before), count)
            }
            done += count
        }
        let freshCost = cost[fresh] ?? Cost()
        let historyCost = cost[history] ?? Cost()
        print(
            "\(backend): \(past) past upgrades seeded in \(String(format: "%.1f", seeded)) s; "
                + "\(rounds) upgrades (start + cancel) per account"
        )
        for (name, value) in [("fresh account", freshCost), ("account with \(past) past upgrades", historyCost)] {
            print(
                "  \(name.padding(toLength: 36, withPad: " ", startingAt: 0)) "
                    + String(
                        format: "CPU %7.1f µs (this process %7.1f, database %7.1f)   wall %7.1f µs",
                        value.perUpgrade(\.total),
                        value.perUpgrade(\.process),
                        value.perUpgrade(\.database),
                        value.perUpgrade(\.wall)
                    )
            )
        }
        print(
            String(
                format: "  history / fresh: CPU %.3f×, wall %.3f×",
                historyCost.perUpgrade(\.total) / freshCost.perUpgrade(\.total),
                historyCost.perUpgrade(\.wall) / freshCost.perUpgrade(\.wall)
            )
        )
    }

    /// `past` ended upgrades of the account with the audit rows their transitions write, oldest
    /// first, a password change every tenth, in transactions of 500 upgrades.
    func seedHistory(accountID: String, usernameKey: String, now: Int64) throws {
        let policy = UpgradePolicy.default
        var started = UpgradeStateMachine.start(now: now, policy: policy)
        _ = try started.apply(.passwordEvaluated(.accepted(secondFactor: false)), now: now)
        // The ended states an account's past upgrades are in; the machine is stored as each ended.
        let ends: [(status: String, event: UpgradeEvent)] = [
            ("failed", .superseded), ("cancelled", .cancel(reason: .userCanceled)), ("expired", .deadlinePassed),
            ("failed", .credentialsChanged),
        ]
        let machines = ends.map { end in
            var machine = started
            _ = try? machine.apply(end.event, now: now + 3600)
            return UpgradeService.encode(machine)
        }
        for first in stride(from: 0, to: past, by: 500) {
            try store.write { tx in
                for index in first..<min(past, first + 500) {
                    let at = now - Int64(past - index) * 60
                    let kind = index % ends.count
                    let id = "upg-\(usernameKey)-\(index)"
                    try tx.insertUpgradeSession(
                        UpgradeSessionRecord(
                            id: id,
                            accountID: accountID,
                            usernameKey: usernameKey,
                            serviceIdentifier: "s",
                            status: ends[kind].status,
                            machine: machines[kind],
                            stateHash: nil,
                            nonceHash: nil,
                            linkedSub: nil,
                            createdAt: at,
                            expiresAt: at + 600,
                            updatedAt: at + 30
                        )
                    )
                    for event in ["upgrade.started", "upgrade.\(ends[kind].status)"] {
                        try tx.appendAudit(
                            AuditEvent(at: at, accountID: accountID, upgradeID: id, event: event, detail: [:])
                        )
                    }
                    if ends[kind].status == "failed" {
                        try WebhookOutbox.enqueue(
                            .upgradeFailed,
                            accountID: accountID,
                            data: [("upgradeId", .string(id))],
                            in: tx,
                            now: at
                        )
                    }
                    if index % 10 == 0 {
                        try tx.insertPasswordChange(
                            PasswordChangeRecord(
                                id: "pwc-\(usernameKey)-\(index)",
                                accountID: accountID,
                                usernameKey: usernameKey,
                                serviceIdentifier: "s",
                                status: "failed",
                                machine: "{}",
                                newPasswordHash: nil,
                                createdAt: at,
                                expiresAt: at + 600,
                                updatedAt: at + 30
                            )
                        )
                        try tx.appendAudit(
                            AuditEvent(
                                at: at,
                                accountID: accountID,
                                upgradeID: nil,
                                event: "password.failed",
                                detail: [:]
                            )
                        )
                    }
                }
            }
        }
    }
}

/// CPU (this process and the database's), and wall time, in microseconds, summed over upgrades.
private struct Cost {
    var process = 0.0
    var database = 0.0
    var wall = 0.0
    var upgrades = 0
    var total: Double { process + database }

    static func now(_ databasePIDs: [Int32]) -> Cost {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func micros(_ time: timeval) -> Double { Double(time.tv_sec) * 1e6 + Double(time.tv_usec) }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let database = databasePIDs.reduce(0.0) { sum, pid in
            // Fields 14 and 15 of /proc/PID/stat, after the parenthesised command name.
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return sum }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return sum }
            return sum + (user + system) / ticks * 1e6
        }
        return Cost(
            process: micros(usage.ru_utime) + micros(usage.ru_stime),
            database: database,
            wall: Double(DispatchTime.now().uptimeNanoseconds) / 1e3
        )
    }

    func minus(_ other: Cost) -> Cost {
        Cost(process: process - other.process, database: database - other.database, wall: wall - other.wall)
    }

    mutating func add(_ other: Cost, _ count: Int) {
        process += other.process
        database += other.database
        wall += other.wall
        upgrades += count
    }

    func perUpgrade(_ value: KeyPath<Cost, Double>) -> Double {
        upgrades == 0 ? 0 : self[keyPath: value] / Double(upgrades)
    }
}

/// The processes whose parent is `parent` (a PostgreSQL cluster's backends and workers).
private func childProcesses(of parent: Int32) -> [Int32] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    return entries.compactMap { Int32($0) }.filter { pid in
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return false }
        return status.split(separator: "\n").contains { $0 == "PPid:\t\(parent)" }
    }
}
