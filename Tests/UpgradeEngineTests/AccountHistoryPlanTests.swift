import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// The per-account reads on an upgrade's and a password change's path go through indexes that hold
/// only what they return (docs/architecture.md §8), so their cost does not grow with the account's
/// past upgrades, password changes and audit rows. Checked on the plans each backend chooses for an
/// account with a long history, after ANALYZE, since a timed test could not fail reliably
/// (`Benchmarks upgrade-history` measures the cost).
@Suite("Account history plans")
struct AccountHistoryPlanTests {
    static let now: Int64 = 1_760_000_000
    static let accountID = "acct-history"

    /// One account with `ended` ended upgrades and as many ended password changes (each with its
    /// audit rows), one open of each, and a few other accounts with a short history. PostgreSQL's
    /// statistics are gathered as autovacuum would; SQLite's planner has none, as in production.
    static func seed(_ store: any UpgradeStore, ended: Int) throws {
        let endedStatuses = ["failed", "cancelled", "expired", "failed"]
        try store.write { tx in
            for index in 0..<21 {
                let id = index == 0 ? accountID : "acct-other-\(index)"
                try tx.insertAccount(
                    AccountRecord(
                        id: id,
                        username: index == 0 ? "history" : "other\(index)",
                        credentialKind: .password,
                        createdAt: now,
                        updatedAt: now
                    )
                )
                let sessions = index == 0 ? ended + 1 : 3
                for number in 0..<sessions {
                    let open = number == sessions - 1
                    let session = UpgradeSessionRecord(
                        id: "upg-\(index)-\(number)",
                        accountID: id,
                        usernameKey: "u\(index)",
                        serviceIdentifier: "s",
                        status: open ? "awaitingAppleCredential" : endedStatuses[number % endedStatuses.count],
                        machine: "{}",
                        stateHash: nil,
                        nonceHash: nil,
                        linkedSub: nil,
                        createdAt: now + Int64(number),
                        expiresAt: now + Int64(number) + 600,
                        updatedAt: now + Int64(number)
                    )
                    try tx.insertUpgradeSession(session)
                    for event in ["upgrade.started", "upgrade.\(session.status)"] {
                        try tx.appendAudit(
                            AuditEvent(at: now, accountID: id, upgradeID: session.id, event: event, detail: [:])
                        )
                    }
                    try tx.insertPasswordChange(
                        PasswordChangeRecord(
                            id: "pwc-\(index)-\(number)",
                            accountID: id,
                            usernameKey: "u\(index)",
                            serviceIdentifier: "s",
                            status: open ? "stepUpRequired" : "failed",
                            machine: "{}",
                            newPasswordHash: nil,
                            createdAt: now + Int64(number),
                            expiresAt: now + Int64(number) + 600,
                            updatedAt: now + Int64(number)
                        )
                    )
                }
            }
            if tx is PostgresTransaction { _ = try TestDatabase.raw(tx, "ANALYZE") }
        }
    }

    /// Each backend's plan for `sql`, one line per node.
    static func plan(_ tx: any StoreTransaction, _ backend: Backend, _ sql: String) throws -> String {
        let prefix = backend == .sqlite ? "EXPLAIN QUERY PLAN " : "EXPLAIN "
        return try TestDatabase.raw(tx, prefix + sql, [.text(accountID), .integer(1000)])
            .compactMap { $0.last?.string }.joined(separator: "\n")
    }

    @Test(
        "the open upgrades and open password changes of an account are read through partial indexes, in order",
        arguments: Backend.all
    )
    func openFlowsReadOnlyOpenRows(_ backend: Backend) throws {
        let db = try backend.database()
        try Self.seed(db.store, ended: 2000)
        let (sessions, changes) = try db.store.read { tx in
            (
                try tx.openUpgradeSessions(accountID: Self.accountID, limit: 1000),
                try tx.openPasswordChanges(accountID: Self.accountID, limit: 1000)
            )
        }
        #expect(sessions.map(\.id) == ["upg-0-2000"])
        #expect(changes.map(\.id) == ["pwc-0-2000"])

        let (sessionPlan, changePlan) = try db.store.write { tx in
            (
                try Self.plan(tx, backend, UpgradeSessionSQL.selectOpenSessions),
                try Self.plan(tx, backend, PasswordChangeSQL.selectOpenChanges)
            )
        }
        for (plan, table, index) in [
            (sessionPlan, "upgrade_sessions", "upgrade_sessions_account_open"),
            (changePlan, "password_changes", "password_changes_account_open"),
        ] {
            // Only the open rows are read, through the index; a sort, where a planner chooses one,
            // sorts only them.
            switch backend {
            case .sqlite:
                #expect(plan.contains("SEARCH \(table) USING INDEX \(index) (account_id=?)"), "\(plan)")
                #expect(!plan.contains("SCAN \(table)"), "\(plan)")
            case .postgres:
                #expect(
                    plan.contains("Index Scan on \(index)") || plan.contains("Index Scan using \(index)"),
                    "\(plan)"
                )
                #expect(!plan.contains("Seq Scan"), "\(plan)")
            }
        }
    }
}
