import Foundation
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// What deleting an account erases outside its own rows (docs/architecture.md §7.1), the same on
/// both backends: the audit trail's one admitted change (personal values to the marker), the outbox's
/// redaction, and the upgrades and password changes asked for a username no account had.
extension StoreConformanceTests {
    func audit(_ account: String?, _ event: String, _ detail: [String: String]) -> AuditEvent {
        AuditEvent(at: Self.now, accountID: account, upgradeID: nil, event: event, detail: detail)
    }

    /// The stored rows of the trail, by id: every column as text, to compare before and after.
    func auditRows(_ db: TestDatabase) throws -> [Int64: [SQLValue]] {
        let rows = try db.store.read { tx in
            try TestDatabase.raw(
                tx,
                "SELECT id, at, account_id, upgrade_id, event, from_status, to_status, detail FROM audit_events"
            )
        }
        var byID: [Int64: [SQLValue]] = [:]
        for row in rows { if case .integer(let id) = row[0] { byID[id] = row } }
        return byID
    }

    @Test(
        "audit trail: a value that names a person may become the marker; every other UPDATE, and DELETE, is refused",
        arguments: Backend.all
    )
    func auditRedactionIsTheOnlyChange(_ backend: Backend) throws {
        let db = try backend.database()
        let keys = PersonalData.keys.sorted()
        try db.store.write { tx in
            for key in keys { try tx.appendAudit(audit("a", "t.\(key)", [key: "value-\(key)", "clientId": "c"])) }
        }
        let stored = try db.store.read { try $0.auditTrail(accountID: "a", limit: 100) }
        #expect(stored.count == keys.count)
        func refused(_ why: String, _ write: (any StoreTransaction) throws -> Void) {
            do {
                try db.store.write { try write($0) }
                Issue.record("\(why): accepted")
            } catch let error as StorageError {
                #expect(error.code == .constraint, "\(why): \(error)")
            } catch {
                Issue.record("\(why): \(error)")
            }
        }
        let first = try #require(stored.first?.id)
        refused("a personal value to anything but the marker") {
            try $0.replaceAuditDetail(id: first, detail: [keys[0]: "someone-else", "clientId": "c"])
        }
        refused("another key to the marker") {
            try $0.replaceAuditDetail(
                id: first,
                detail: [keys[0]: PersonalData.redactedMarker, "clientId": "[redacted]"]
            )
        }
        refused("a key removed") {
            try $0.replaceAuditDetail(id: first, detail: [keys[0]: PersonalData.redactedMarker])
        }
        refused("a key added") {
            try $0.replaceAuditDetail(
                id: first,
                detail: [keys[0]: PersonalData.redactedMarker, "clientId": "c", "extra": "x"]
            )
        }
        refused("another column") {
            try TestDatabase.raw($0, "UPDATE audit_events SET event = ? WHERE id = ?", [.text("x"), .integer(first)])
        }
        refused("the account id") {
            try TestDatabase.raw(
                $0,
                "UPDATE audit_events SET account_id = ? WHERE id = ?",
                [.text("b"), .integer(first)]
            )
        }
        refused("the detail replaced by text that is not an object") {
            try TestDatabase.raw($0, "UPDATE audit_events SET detail = ? WHERE id = ?", [.text("[]"), .integer(first)])
        }
        refused("a delete") { try TestDatabase.raw($0, "DELETE FROM audit_events WHERE id = ?", [.integer(first)]) }
        #expect(try db.store.read { try $0.auditTrail(accountID: "a", limit: 100) } == stored)

        // Each key the engine counts as personal is one the schema lets go, and only that value changes.
        let before = try auditRows(db)
        try db.store.write { tx in
            for event in stored {
                var detail = event.detail
                detail[String(event.event.dropFirst(2))] = PersonalData.redactedMarker
                try tx.replaceAuditDetail(id: try #require(event.id), detail: detail)
            }
        }
        let after = try db.store.read { try $0.auditTrail(accountID: "a", limit: 100) }
        #expect(after.map(\.id) == stored.map(\.id) && after.map(\.event) == stored.map(\.event))
        for event in after {
            #expect(event.detail == [String(event.event.dropFirst(2)): PersonalData.redactedMarker, "clientId": "c"])
        }
        let rows = try auditRows(db)
        #expect(rows.keys == before.keys)
        for (id, row) in rows { #expect(Array(row.dropLast()) == Array(before[id]?.dropLast() ?? []), "\(id)") }
    }

    @Test(
        "audit trail: a deletion's redaction finds the account's rows and other rows naming its Apple ids, and changes only those values",
        arguments: Backend.all
    )
    func auditRedactionFindsWhatNamesTheAccount(_ backend: Backend) throws {
        let db = try backend.database()
        try db.store.write { tx in
            try tx.appendAudit([
                audit("a", "upgrade.converting", ["sub": "001.alice", "clientId": "app"]),
                audit("a", "account.username-rekeyed", ["previous": "Alice", "rule": "UsernameCaseMapped"]),
                audit("a", "upgrade.failed", ["problem": "invalid-credentials"]),
                // Another account's upgrade refused as a sub-conflict names alice's sub.
                audit("b", "upgrade.rejected", ["sub": "001.alice", "problem": "sub-conflict"]),
                audit("b", "upgrade.converting", ["sub": "001.bob", "clientId": "app"]),
                audit("b", "account.username-rekeyed", ["previous": "Bob"]),
                audit(nil, "upgrade.started", ["serviceIdentifier": "s"]),
                // A transfer's ids are alice's too.
                audit("c", "upgrade.rejected", ["sub": "002.alice-new", "problem": "sub-conflict"]),
            ])
        }
        let found = try db.store.read {
            try $0.auditEventsNamingPersonalData(accountID: "a", subs: ["001.alice", "002.alice-new"])
        }
        #expect(
            found.map(\.event) == [
                "upgrade.converting", "account.username-rekeyed", "upgrade.rejected", "upgrade.rejected",
            ]
        )
        #expect(found.map(\.id) == found.map(\.id).sorted { ($0 ?? 0) < ($1 ?? 0) })
        #expect(try db.store.read { try $0.auditEventsNamingPersonalData(accountID: "nobody", subs: []) }.isEmpty)

        let before = try auditRows(db)
        #expect(try db.store.write { try $0.redactAudit(accountID: "a", subs: ["001.alice", "002.alice-new"]) } == 4)
        let redacted = PersonalData.redactedMarker
        let a = try db.store.read { try $0.auditTrail(accountID: "a", limit: 10) }
        #expect(
            a.map(\.detail) == [
                ["sub": redacted, "clientId": "app"], ["previous": redacted, "rule": "UsernameCaseMapped"],
                ["problem": "invalid-credentials"],
            ]
        )
        let b = try db.store.read { try $0.auditTrail(accountID: "b", limit: 10) }
        #expect(
            b.map(\.detail) == [
                ["sub": redacted, "problem": "sub-conflict"], ["sub": "001.bob", "clientId": "app"],
                ["previous": "Bob"],
            ]
        )
        #expect(try db.store.read { try $0.auditTrail(accountID: "c", limit: 10) }.first?.detail["sub"] == redacted)
        // Ids, times, accounts, events and statuses as they were; nothing else changed.
        let after = try auditRows(db)
        #expect(after.keys == before.keys)
        for (id, row) in after { #expect(Array(row.dropLast()) == Array(before[id]?.dropLast() ?? [])) }
        let text = after.values.map { "\($0)" }.joined()
        #expect(!text.contains("001.alice") && !text.contains("Alice") && !text.contains("002.alice-new"))
        #expect(text.contains("001.bob") && text.contains("Bob"))
        // A second redaction finds nothing left to change.
        #expect(try db.store.write { try $0.redactAudit(accountID: "a", subs: ["001.alice", "002.alice-new"]) } == 0)
    }

    @Test(
        "outbox: a deletion's redaction nulls the members naming a person in the account's events, keeping ids and states",
        arguments: Backend.all
    )
    func webhookRedaction(_ backend: Backend) throws {
        let db = try backend.database()
        func event(
            _ id: String,
            _ account: String,
            _ type: WebhookEventType,
            _ data: [(String, JSONValue)]
        ) -> WebhookEventRecord {
            var record = WebhookOutbox.event(type, accountID: account, data: data, now: Self.now)
            record.id = id
            return record
        }
        let events = [
            event(
                "msg_a1",
                "a",
                .accountConverted,
                [
                    ("accountId", .string("a")), ("username", .string("alice")), ("sub", .string("001.alice")),
                    ("upgradeId", .string("upg_1")),
                ]
                    + UpgradeService.profileData(
                        AccountProfileRecord(
                            accountID: "a",
                            email: "alice@example.com",
                            displayName: "Alice Example",
                            importRun: nil,
                            importLine: nil,
                            updatedAt: Self.now,
                            emailSource: .device,
                            displayNameSource: .import,
                            fullName: PersonName(givenName: "Alice", familyName: "Example"),
                            realUserStatus: .likelyReal
                        )
                    )
            ),
            event(
                "msg_a2",
                "a",
                .upgradeFailed,
                [("accountId", .string("a")), ("upgradeId", .string("upg_2")), ("reason", .string("locked"))]
            ),
            event(
                "msg_a3",
                "a",
                .appleEmailChanged,
                [
                    ("accountId", .string("a")), ("sub", .string("001.alice")),
                    ("email", .string("x@privaterelay.appleid.com")),
                    ("isPrivateEmail", .bool(true)), ("emailForwarding", .bool(false)),
                ]
            ),
            event(
                "msg_a4",
                "a",
                .transferCompleted,
                [
                    ("accountId", .string("a")), ("oldSub", .string("001.alice")), ("newSub", .string("002.alice")),
                    ("email", .null),
                ]
            ),
            event(
                "msg_b1",
                "b",
                .accountConverted,
                [("accountId", .string("b")), ("username", .string("bob")), ("sub", .string("001.bob"))]
            ),
        ]
        try db.store.write { tx in for event in events { try tx.insertWebhookEvent(event) } }
        // msg_a1 was delivered, msg_a3 is being sent at this moment.
        _ = try db.store.write {
            try $0.claimDueWebhookEvents(now: Self.now, token: "t", claimedUntil: Self.now + 30, limit: 10)
        }
        #expect(try db.store.write { try $0.finishWebhookEvent(id: "msg_a1", token: "t", now: Self.now) })
        _ = try db.store.write {
            try $0.claimDueWebhookEvents(now: Self.now, token: "u", claimedUntil: Self.now + 30, limit: 10)
        }
        #expect(try db.store.write { try $0.finishWebhookEvent(id: "msg_a2", token: "u", now: Self.now) })
        _ = try db.store.write {
            try $0.claimDueWebhookEvents(now: Self.now, token: "v", claimedUntil: Self.now + 30, limit: 10)
        }

        let naming = try db.store.read { try $0.webhookEventsNamingPersonalData(accountID: "a") }
        #expect(naming.map(\.id) == ["msg_a1", "msg_a3", "msg_a4"])
        let before = try db.store.read { tx in try events.map { try #require(try tx.webhookEvent(id: $0.id)) } }
        #expect(try db.store.write { try $0.redactWebhookEvents(accountID: "a") } == 3)
        let after = try db.store.read { tx in try events.map { try #require(try tx.webhookEvent(id: $0.id)) } }
        let timestamp = WebhookOutbox.timestamp(Self.now)
        #expect(
            after.map(\.payload) == [
                #"{"type":"account.converted","timestamp":"\#(timestamp)","data":{"accountId":"a","username":null,"sub":null,"upgradeId":"upg_1","displayName":null,"displayNameSource":"import","email":null,"emailSource":"device","fullName":null,"realUserStatus":"likelyReal"}}"#,
                before[1].payload,
                #"{"type":"apple.email-changed","timestamp":"\#(timestamp)","data":{"accountId":"a","sub":null,"email":null,"isPrivateEmail":true,"emailForwarding":false}}"#,
                #"{"type":"transfer.completed","timestamp":"\#(timestamp)","data":{"accountId":"a","oldSub":null,"newSub":null,"email":null}}"#,
                before[4].payload,
            ]
        )
        for (old, new) in zip(before, after) {
            var unchanged = new
            unchanged.payload = old.payload
            #expect(unchanged == old, "only the payload changes: \(old.id)")
        }
        #expect(try db.store.write { try $0.redactWebhookEvents(accountID: "a") } == 0)
        // A replay makes them pending again, redacted.
        #expect(try db.store.write { try $0.replayWebhookEvents(since: 0, now: Self.now + 60) } == events.count)
        #expect(try db.store.read { try $0.webhookEvent(id: "msg_a1") }?.payload == after[0].payload)
    }

    @Test(
        "upgrades and password changes asked for a username no account had are deleted by that name, and no others",
        arguments: Backend.all
    )
    func accountlessFlowsDeleted(_ backend: Backend) throws {
        let db = try backend.database()
        let alice = account("alice")
        func session(_ id: String, _ accountID: String?, _ key: String) -> UpgradeSessionRecord {
            UpgradeSessionRecord(
                id: id,
                accountID: accountID,
                usernameKey: key,
                serviceIdentifier: "example.com",
                status: "failed",
                machine: "{}",
                stateHash: nil,
                nonceHash: nil,
                linkedSub: nil,
                createdAt: Self.now,
                expiresAt: Self.now,
                updatedAt: Self.now
            )
        }
        func change(_ id: String, _ accountID: String?, _ key: String) -> PasswordChangeRecord {
            PasswordChangeRecord(
                id: id,
                accountID: accountID,
                usernameKey: key,
                serviceIdentifier: "example.com",
                status: "failed",
                machine: "{}",
                newPasswordHash: nil,
                createdAt: Self.now,
                expiresAt: Self.now,
                updatedAt: Self.now
            )
        }
        try db.store.write { tx in
            try tx.insertAccount(alice)
            for (id, accountID, key) in [
                ("1", nil, "alice"), ("2", alice.id, "alice"), ("3", nil, "bob"), ("4", nil, "alice"),
            ] {
                try tx.insertUpgradeSession(session("upg_\(id)", accountID, key))
                try tx.insertPasswordChange(change("pwc_\(id)", accountID, key))
            }
        }
        try db.store.write { tx in
            try tx.deleteAccountlessUpgradeSessions(usernameKey: "alice")
            try tx.deleteAccountlessPasswordChanges(usernameKey: "alice")
        }
        let left = try db.store.read { tx in
            try ["1", "2", "3", "4"].map {
                (try tx.upgradeSession(id: "upg_\($0)") != nil, try tx.passwordChange(id: "pwc_\($0)") != nil)
            }
        }
        #expect(left.map(\.0) == [false, true, true, false] && left.map(\.1) == [false, true, true, false])
    }
}
