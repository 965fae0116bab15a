import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

extension StoreConformanceTests {
    @Test(
        "the report's reads: accounts by kind, flow steps and account changes per day, the median completion",
        arguments: Backend.all
    )
    func reportReads(_ backend: Backend) throws {
        let db = try backend.database()
        let day = Self.now / 86400
        let (alice, bob, carol) = (account("alice"), account("bob"), account("carol"))
        var converted = carol
        converted.credentialKind = .appleOnly
        func session(
            _ id: String,
            _ status: String,
            created: Int64,
            updated: Int64,
            entry: String?
        ) -> UpgradeSessionRecord {
            UpgradeSessionRecord(
                id: id,
                accountID: alice.id,
                usernameKey: "alice",
                serviceIdentifier: "s",
                status: status,
                machine: "{}",
                stateHash: nil,
                nonceHash: nil,
                linkedSub: nil,
                createdAt: created,
                expiresAt: created + 300,
                updatedAt: updated,
                entry: entry
            )
        }
        func step(_ at: Int64, _ event: String, _ from: String, _ to: String, _ detail: [String: String]) -> AuditEvent
        {
            AuditEvent(
                at: at,
                accountID: alice.id,
                upgradeID: nil,
                event: event,
                fromStatus: from,
                toStatus: to,
                detail: detail
            )
        }
        try db.store.write { tx in
            try tx.insertAccount(alice)
            try tx.insertAccount(bob)
            try tx.insertAccount(converted)
            try tx.upsertPasswordCredential(
                PasswordCredentialRecord(accountID: bob.id, hash: "", format: "legacy", updatedAt: Self.now)
            )
            // Completed in 10, 20, 40 and 100 s; one open; one completed after the window.
            for (index, seconds) in [Int64(10), 20, 40, 100].enumerated() {
                try tx.insertUpgradeSession(
                    session(
                        "upg_\(index)",
                        "completed",
                        created: Self.now,
                        updated: Self.now + seconds,
                        entry: "silent"
                    )
                )
            }
            try tx.insertUpgradeSession(
                session("upg_open", "awaitingAppleCredential", created: Self.now, updated: Self.now, entry: nil)
            )
            try tx.insertUpgradeSession(
                session("upg_late", "completed", created: Self.now, updated: Self.now + 2 * 86400 + 10, entry: nil)
            )
            try tx.appendAudit([
                step(Self.now, "upgrade.passwordEvaluated", "started", "awaitingAppleCredential", ["entry": "silent"]),
                step(
                    Self.now + 1,
                    "upgrade.passwordEvaluated",
                    "started",
                    "awaitingAppleCredential",
                    ["entry": "silent"]
                ),
                step(
                    Self.now + 2,
                    "upgrade.cancel",
                    "awaitingAppleCredential",
                    "cancelled",
                    ["reason": "userCanceled", "entry": "silent"]
                ),
                step(
                    Self.now + 86400,
                    "passwordChange.passwordEvaluated",
                    "started",
                    "failed",
                    ["problem": "invalid-credentials"]
                ),
                // Outside the window, and not a flow's.
                step(Self.now + 2 * 86400, "upgrade.passwordEvaluated", "started", "failed", [:]),
                step(Self.now, "transfer.prepare", "linked", "transferPrepared", [:]),
                AuditEvent(at: Self.now, accountID: carol.id, upgradeID: nil, event: "account.convertedToApple"),
                AuditEvent(
                    at: Self.now,
                    accountID: bob.id,
                    upgradeID: nil,
                    event: "account.imported",
                    detail: ["credentialKind": "password"]
                ),
                AuditEvent(
                    at: Self.now + 86400,
                    accountID: nil,
                    upgradeID: nil,
                    event: "account.deleted",
                    detail: ["credentialKind": "password"]
                ),
                AuditEvent(at: Self.now + 2 * 86400, accountID: nil, upgradeID: nil, event: "account.created"),
            ])
        }
        let until = Self.now + 2 * 86400
        try db.store.read { tx in
            #expect(
                try tx.accountCredentialCounts()
                    == AccountCredentialCounts(byKind: ["password": 2, "appleOnly": 1], legacyPasswords: 1)
            )
            let steps = try tx.flowStepCounts(since: Self.now, until: until)
            #expect(
                Set(
                    steps.map {
                        "\($0.day - day) \($0.event) \($0.fromStatus ?? "-")>\($0.toStatus ?? "-") \($0.entry ?? "-") \($0.reason ?? "-") \($0.problem ?? "-") \($0.count)"
                    }
                )
                    == [
                        "0 upgrade.passwordEvaluated started>awaitingAppleCredential silent - - 2",
                        "0 upgrade.cancel awaitingAppleCredential>cancelled silent userCanceled - 1",
                        "1 passwordChange.passwordEvaluated started>failed - - invalid-credentials 1",
                    ]
            )
            let changes = try tx.accountChangeCounts(since: Self.now, until: until)
            #expect(
                Set(changes.map { "\($0.day - day) \($0.event) \($0.credentialKind ?? "-") \($0.count)" })
                    == [
                        "0 account.convertedToApple - 1", "0 account.imported password 1",
                        "1 account.deleted password 1",
                    ]
            )
            #expect(try tx.accountChangeCounts(since: until, until: Int64.max).map(\.event) == ["account.created"])
            // Of 10, 20, 40 and 100: the mean of the middle two. Of 10, 20 and 40: the middle one.
            #expect(try tx.medianCompletionSeconds(.upgrade, since: Self.now, until: until) == 30)
            #expect(try tx.medianCompletionSeconds(.upgrade, since: Self.now, until: Self.now + 41) == 20)
            #expect(try tx.medianCompletionSeconds(.upgrade, since: Self.now + 101, until: until) == nil)
            #expect(try tx.medianCompletionSeconds(.passwordChange, since: Self.now, until: until) == nil)
            #expect(
                try tx.upgradeSession(id: "upg_0")?.entry == "silent" && tx.upgradeSession(id: "upg_open")?.entry == nil
            )
        }
    }
}
