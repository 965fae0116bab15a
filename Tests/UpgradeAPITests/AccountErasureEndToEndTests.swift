import Foundation
import Testing
import UpgradeAPI
import UpgradeTestSupport

@testable import UpgradeEngine

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What `DELETE /v1/admin/accounts/{username}` leaves behind, over HTTP on loopback with signed
/// webhooks: an account imported with an email and a display name, converted with the name's parts its
/// device forwarded (so the audit trail and the outbox hold its Apple `sub`, username and name), named
/// by another account's refused upgrade, throttled and asked for before it existed, then deleted.
/// Afterwards no row of any table holds its username, email, display name, name's parts, relay
/// address or `sub`, and neither a pending event nor `webhooks replay`
/// sends them again, while `account.deleted` goes out (docs/architecture.md §7.1, Schema/webhooks.md).
@Suite("REST API end to end: a deleted account's personal data is erased everywhere")
struct AccountErasureEndToEndTests {
    static let username = "zelda.erasure"
    static let password = "pw-zelda-erasure"
    static let email = "zelda.private@example.com"
    static let displayName = "Zelda Quinn Erasure"
    static let relayEmail = "zelda-relay-2@privaterelay.appleid.com"
    /// What the device forwards from Apple's first authorization: the imported email and display name
    /// stay, the name's parts are kept beside them (and carried by `account.converted`).
    static let givenName = "Zelda-Given-Device"
    static let familyName = "Quinn-Family-Device"

    final class Harness: Sendable {
        let receiver: WebhookReceiver
        let server: DevServer
        let supportToken: String

        init(_ backend: Backend) throws {
            (receiver, server, supportToken) = try WebhookReceiver.withServer(
                backend,
                revocationIntervalMilliseconds: 50
            )
        }

        deinit { receiver.stop() }

        /// Imports accounts as `accounts import` does, each with a password, an email and a display name.
        func importAccounts(_ rows: [(username: String, password: String, email: String, displayName: String)]) throws {
            let hasher = try PasswordHasher(parameters: .init(memoryKiB: 256, iterations: 1))
            let lines = try rows.map { row in
                let object: [String: String] = [
                    "username": row.username, "passwordHash": try hasher.hash(password: row.password),
                    "email": row.email, "displayName": row.displayName,
                ]
                return String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
            }
            var reader = ImportReader(bytes: Array((lines.joined(separator: "\n") + "\n").utf8), format: .jsonl)
            let summary = try AccountImporter(
                store: server.application.store,
                options: AccountImportOptions(runID: "erasure-test", source: "test.jsonl (jsonl)")
            ).run(&reader, now: { [server] in server.clock.now }, onRow: { _ in })
            #expect(summary.created == rows.count)
        }

        func upgrade(_ username: String, _ password: String) async throws -> DevServer.Response {
            try await server.post(
                "/v1/upgrades",
                ["username": username, "password": password, "serviceIdentifier": "s"]
            )
        }

        /// Every delivery the receiver recorded, in order: its type, account and body.
        func deliveries() -> [(type: String, accountID: String?, body: String)] {
            let data = FileManager.default.contents(atPath: receiver.record) ?? Data()
            return String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap { line in
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                    let type = object["type"] as? String, let body = object["body"] as? String
                else { return nil }
                return (type, object["accountId"] as? String, body)
            }
        }
    }

    /// Every value of every column of every table, as text, read through SQL (`table.column` → values).
    static func everyValue(_ store: any UpgradeStore) throws -> [String: [String]] {
        try store.read { tx in
            var values: [String: [String]] = [:]
            func texts(_ rows: [[SQLValue]]) -> [String] {
                rows.compactMap { row in
                    switch row.first {
                    case .text(let text): text
                    case .blob(let bytes): String(decoding: bytes, as: UTF8.self)
                    default: nil
                    }
                }
            }
            switch tx {
            case let sqlite as SQLiteTransaction:
                for table in texts(try sqlite.rows("SELECT name FROM sqlite_master WHERE type = 'table'")) {
                    for column in try sqlite.rows("SELECT name FROM pragma_table_info(?)", [.text(table)]) {
                        let name = column.first?.string ?? ""
                        values["\(table).\(name)"] = texts(
                            try sqlite.rows("SELECT CAST(\"\(name)\" AS TEXT) FROM \"\(table)\"")
                        )
                    }
                }
            case let postgres as PostgresTransaction:
                let columns = try postgres.rows(
                    """
                    SELECT c.table_name::text, c.column_name::text FROM information_schema.columns c
                    JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
                    WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'
                    """
                )
                for column in columns {
                    let (table, name) = (column[0].string ?? "", column[1].string ?? "")
                    values["\(table).\(name)"] = texts(try postgres.rows("SELECT \"\(name)\"::text FROM \"\(table)\""))
                }
            default:
                Issue.record("unknown backend")
            }
            return values
        }
    }

    /// Where in the database each of `strings` appears (`table.column: string`).
    static func places(of strings: [String], in values: [String: [String]]) -> [String] {
        values.sorted { $0.key < $1.key }.flatMap { column, texts in
            strings.filter { string in texts.contains { $0.contains(string) } }.map { "\(column): \($0)" }
        }
    }

    @Test(
        "imported, converted, named elsewhere, then deleted: no table holds its name, email or sub; no webhook resends them",
        arguments: Backend.all
    )
    func deletionErasesEverywhere(_ backend: Backend) async throws {
        let harness = try Harness(backend)
        let server = harness.server
        let store = server.application.store

        // Asked for before the account existed: an upgrade and a password change keep the name as typed.
        #expect(try await harness.upgrade(Self.username, Self.password).status == 401)
        let change = try await server.post(
            "/v1/password-changes",
            [
                "username": Self.username, "password": Self.password, "newPassword": "abcdEf-ghijK1-lmnoPq",
                "serviceIdentifier": "s",
            ]
        )
        #expect(change.status == 401)

        try harness.importAccounts([
            (Self.username, Self.password, Self.email, Self.displayName),
            ("bob.keeps", "pw-bob-keeps", "bob.keeps@example.com", "Bob Keeps Everything"),
        ])
        let accountID = try #require(try store.read { try $0.account(username: Username(Self.username))?.id })
        let bobID = try #require(try store.read { try $0.account(username: Username("bob.keeps"))?.id })

        // Converted: the audit trail and the outbox now hold its sub and username.
        let started = try await harness.upgrade(Self.username, Self.password)
        let upgradeID = try #require(started["id"])
        let fullName: [String: any Sendable] = ["givenName": Self.givenName, "familyName": Self.familyName]
        let completed = try await server.post(
            "/v1/upgrades/\(upgradeID)/apple-credential",
            try server.appleCredential(for: started).merging(["fullName": fullName]) { _, given in given }
        )
        #expect(completed["status"] == "completed")
        #expect(try store.read { try $0.accountProfile(accountID: accountID) }?.fullName?.givenName == Self.givenName)
        let link = try #require(try store.read { try $0.appleLink(accountID: accountID) })
        let sub = link.sub
        let relay = try #require(link.email)

        // Bob tries the same Apple ID: refused as a sub-conflict, and his audit row names zelda's sub.
        let bobStarted = try await harness.upgrade("bob.keeps", "pw-bob-keeps")
        let bobUpgrade = try #require(bobStarted["id"])
        let conflict = try await server.post(
            "/v1/upgrades/\(bobUpgrade)/apple-credential",
            try server.appleCredential(for: bobStarted)
        )
        #expect(conflict.problem == "sub-conflict", "\(String(decoding: conflict.body, as: UTF8.self))")

        let converted = {
            harness.deliveries().contains { $0.type == "account.converted" && $0.accountID == accountID }
        }
        #expect(await WebhookReceiver.eventually { converted() })
        #expect(
            harness.deliveries().contains {
                $0.body.contains(sub) && $0.body.contains(Self.username) && $0.body.contains(Self.familyName)
                    && $0.body.contains(Self.displayName)
            }
        )

        // While the backend is down: a password guess for the name (a throttle row keyed by it, an
        // upgrade.failed event) and Apple's email-enabled with a new relay address (an event holding
        // the sub and the address) wait in the outbox.
        harness.receiver.setDown(true)
        #expect(try await harness.upgrade(Self.username, "wrong-guess").status == 401)
        let notified = try server.application.transfers.handleNotification(
            type: "email-enabled",
            sub: sub,
            email: Self.relayEmail,
            isPrivateEmail: true,
            now: server.clock.now
        )
        #expect(notified.outcome == .changed)
        let personal = [
            Self.username, Self.email, Self.displayName, sub, relay, Self.relayEmail, Self.givenName, Self.familyName,
        ]
        let before = Self.places(of: personal, in: try Self.everyValue(store))
        for table in ["audit_events", "webhook_outbox", "login_throttle", "upgrade_sessions", "password_changes"] {
            #expect(before.contains { $0.hasPrefix(table + ".") }, "\(table) held nothing of the account: \(before)")
        }

        let deleted = try await server.send(
            "DELETE",
            "/v1/admin/accounts/\(Self.username)",
            body: nil,
            contentType: nil,
            headers: ["Authorization": "Bearer \(harness.supportToken)"]
        )
        #expect(deleted.status == 200 && deleted["accountId"] == accountID)

        // Nothing in any table names the person; the rest is as it was.
        let after = try Self.everyValue(store)
        #expect(Self.places(of: personal, in: after).isEmpty, "\(Self.places(of: personal, in: after))")
        #expect(
            Self.places(of: ["bob.keeps", "bob.keeps@example.com", "Bob Keeps Everything"], in: after).count >= 3
        )
        let trail = try store.read { try $0.auditTrail(accountID: accountID, limit: 100) }
        #expect(trail.last?.event == "account.deleted" && trail.count > 3)
        #expect(trail.contains { $0.detail["sub"] == PersonalData.redactedMarker })
        let bobTrail = try store.read { try $0.auditTrail(accountID: bobID, limit: 100) }
        #expect(bobTrail.contains { $0.detail["sub"] == PersonalData.redactedMarker })

        // The backend is back: the waiting events go out redacted, then account.deleted; then a
        // replay of everything sends nothing that names the person either.
        let delivered = harness.deliveries().count
        harness.receiver.setDown(false)
        server.clock.advance(3600)
        // Time moves on while waiting: an attempt that met the outage but ended after the advance
        // was deferred from the advanced time, and must fall due again.
        #expect(
            await WebhookReceiver.eventually {
                server.clock.advance(60)
                return harness.deliveries().contains { $0.type == "account.deleted" && $0.accountID == accountID }
            }
        )
        // Time moves on while waiting, so an event a slow run deferred with backoff falls due again.
        let drained = {
            server.clock.advance(60)
            return (try? server.application.webhooks.counts().pending) == 0
        }
        #expect(await WebhookReceiver.eventually { drained() })
        let replay = try WebhookEndToEndTests.cli(server, ["webhooks", "replay", "--since", "0"])
        #expect(replay.status == 0, "\(replay.err)")
        server.clock.advance(3600)  // the CLI schedules with the real clock; the server's runs ahead
        #expect(await WebhookReceiver.eventually { drained() })
        let since = harness.deliveries().dropFirst(delivered)
        #expect(since.filter { $0.type == "account.deleted" && $0.accountID == accountID }.count == 2)
        #expect(since.contains { $0.type == "account.converted" && $0.accountID == accountID })
        #expect(since.contains { $0.type == "apple.email-changed" && $0.accountID == accountID })
        for delivery in since {
            for string in personal {
                #expect(!delivery.body.contains(string), "\(delivery.type) sent \(string) after the deletion")
            }
        }
    }
}
