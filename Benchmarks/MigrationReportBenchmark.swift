import Foundation
import UpgradeEngine

/// `Benchmarks report [ACCOUNTS] [--db postgres://...]` (PostgreSQL from `--db` or `UPGRADE_DB`,
/// SQLite always); returns the exit code: 2 for bad arguments, 1 for a failed run.
func migrationReportCommand(_ arguments: [String]) -> Int32 {
    guard
        let (numbers, database) = bothBackendsArguments(
            arguments,
            command: "report",
            maxNumbers: 1,
            usage: "Benchmarks report [ACCOUNTS > 0] [--db postgres://...]"
        )
    else { return 2 }
    do {
        try runMigrationReportBenchmark(accounts: numbers.first ?? 1_000_000, database: database)
        return 0
    } catch {
        print("report: \(error)")
        return 1
    }
}

/// How long `ReportService.report` takes over a migration's worth of rows (docs/architecture.md
/// §7.7): `accounts` password accounts imported over 60 days, each with one upgrade (half completed,
/// the others cancelled, failed, expired or superseded): four audit rows (imported, started, ended,
/// converted or a ticket) and one upgrade row an account. Reported: the whole history,
/// and the last day, each the best of three reads.
func runMigrationReportBenchmark(accounts: Int, database: String?) throws {
    try onBothBackends("report", database: database) { store, backend in
        try ReportRun(store: store, backend: backend, accounts: accounts).run()
    }
}

private struct ReportRun {
    let store: any UpgradeStore
    let backend: String
    let accounts: Int
    let now = Int64(Date().timeIntervalSince1970) / 86400 * 86400
    static let days: Int64 = 60
    /// Each run's rows apart from another's on the same database.
    let prefix = "rep" + String(UUID().uuidString.prefix(8)).lowercased()

    func run() throws {
        let seeding = ContinuousClock.now
        try seed()
        let seeded = ContinuousClock.now - seeding
        print("\(backend): seeded \(accounts) accounts, \(accounts * 4) audit rows, \(accounts) upgrades in \(seeded)")
        let reports = ReportService(store: store)
        for (label, since) in [("all time", Int64?.none), ("last day", now - 86400)] {
            var best = Duration.seconds(3600)
            var report: MigrationReport?
            for _ in 0..<3 {
                let start = ContinuousClock.now
                report = try reports.report(since: since, until: now, now: now)
                best = min(best, ContinuousClock.now - start)
            }
            let milliseconds = Double(best.components.seconds) * 1000 + Double(best.components.attoseconds) / 1e15
            let started = report?.upgrades.total.started ?? 0
            print(
                "\(backend): report (\(label)): \(String(format: "%.1f", milliseconds)) ms (\(started) upgrades started)"
            )
        }
    }

    /// In transactions of 1 000 accounts: each imported on a day of the last 60, its upgrade begun
    /// that day and ended an hour later.
    func seed() throws {
        let ends: [(event: String, to: String, detail: [String: String])] = [
            ("upgrade.authorizationCodeExchanged", "completed", [:]),
            ("upgrade.cancel", "cancelled", ["reason": "userCanceled"]),
            ("upgrade.authorizationCodeExchanged", "completed", [:]),
            ("upgrade.passwordEvaluated", "failed", ["problem": "invalid-credentials"]),
            ("upgrade.authorizationCodeExchanged", "completed", [:]),
            ("upgrade.deadlinePassed", "expired", [:]),
            ("upgrade.authorizationCodeExchanged", "completed", [:]),
            ("upgrade.superseded", "cancelled", [:]),
        ]
        let entries = ["silent", "withUI", "ticket"]
        for first in stride(from: 0, to: accounts, by: 1000) {
            let range = first..<min(accounts, first + 1000)
            var rows: [AccountRecord] = []
            var events: [AuditEvent] = []
            var sessions: [UpgradeSessionRecord] = []
            for index in range {
                let at = now - (Int64(index) % Self.days + 1) * 86400 + Int64(index % 80_000)
                let id = "\(prefix)-\(index)"
                let end = ends[index % ends.count]
                let entry = entries[index % entries.count]
                rows.append(
                    AccountRecord(
                        id: id,
                        username: "\(prefix)-user-\(index)",
                        credentialKind: end.to == "completed" ? .appleOnly : .password,
                        createdAt: at,
                        updatedAt: at
                    )
                )
                let upgrade = "upg-\(id)"
                events.append(
                    AuditEvent(
                        at: at,
                        accountID: id,
                        upgradeID: nil,
                        event: "account.imported",
                        detail: ["credentialKind": "password"]
                    )
                )
                events.append(
                    AuditEvent(
                        at: at,
                        accountID: id,
                        upgradeID: upgrade,
                        event: "upgrade.passwordEvaluated",
                        fromStatus: "started",
                        toStatus: "awaitingAppleCredential",
                        detail: ["entry": entry]
                    )
                )
                events.append(
                    AuditEvent(
                        at: at + 3600,
                        accountID: id,
                        upgradeID: upgrade,
                        event: end.event,
                        fromStatus: end.to == "completed" ? "converting" : "awaitingAppleCredential",
                        toStatus: end.to,
                        detail: end.detail.merging(["entry": entry]) { $1 }
                    )
                )
                if end.to == "completed" {
                    events.append(
                        AuditEvent(at: at + 3600, accountID: id, upgradeID: nil, event: "account.convertedToApple")
                    )
                } else {
                    events.append(AuditEvent(at: at + 60, accountID: id, upgradeID: nil, event: "ticket.issued"))
                }
                sessions.append(
                    UpgradeSessionRecord(
                        id: upgrade,
                        accountID: id,
                        usernameKey: "\(prefix)-user-\(index)",
                        serviceIdentifier: "s",
                        status: end.to,
                        machine: "{}",
                        stateHash: nil,
                        nonceHash: nil,
                        linkedSub: nil,
                        createdAt: at,
                        expiresAt: at + 300,
                        updatedAt: at + 3600,
                        entry: entry
                    )
                )
            }
            try store.write { tx in
                try tx.insertAccountRows(rows)
                try tx.appendAudit(events)
                for session in sessions { try tx.insertUpgradeSession(session) }
            }
        }
    }
}
