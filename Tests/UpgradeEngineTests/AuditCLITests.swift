import Foundation
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// `upgrade-cli audit` on every backend (`UPGRADE_DB`): the same search as `GET /v1/admin/audit`,
/// as a table or JSON lines, paging internally past the API's page size.
@Suite("upgrade-cli audit")
struct AuditCLITests {
    static let start: Int64 = 1_795_514_400  // 2026-11-24T10:00:00Z

    /// Alice (1 `account.created`, then 1 100 `x.ping` events, one a second) and Bob (1 `account.created`).
    func seed(_ store: any UpgradeStore) throws -> (alice: String, bob: String) {
        let alice = UUID().uuidString.lowercased()
        let bob = UUID().uuidString.lowercased()
        try store.write { tx in
            for (id, name) in [(alice, "alice"), (bob, "bob")] {
                try tx.insertAccount(
                    AccountRecord(
                        id: id,
                        username: name,
                        credentialKind: .password,
                        createdAt: Self.start,
                        updatedAt: Self.start
                    )
                )
                try tx.appendAudit(
                    AuditEvent(at: Self.start, accountID: id, upgradeID: nil, event: "account.created")
                )
            }
            for index in 0..<1100 {
                try tx.appendAudit(
                    AuditEvent(
                        at: Self.start + 1 + Int64(index),
                        accountID: alice,
                        upgradeID: "upg_\(index)",
                        event: "x.ping",
                        fromStatus: "started",
                        toStatus: "failed",
                        detail: ["n": String(index)]
                    )
                )
            }
        }
        return (alice, bob)
    }

    func lines(_ text: String) -> [Substring] { text.split(separator: "\n") }

    @Test("table and JSON lines, every filter, paging past 1000 rows, exit 0 with no rows", arguments: Backend.all)
    func search(_ backend: Backend) throws {
        let db = try backend.database(forProcesses: true)
        let url = try #require(db.url)
        let (alice, bob) = try seed(db.store)
        func audit(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
            try runCLI(["audit"] + arguments, environment: ["UPGRADE_DB": url])
        }

        let table = try audit([])
        #expect(table.status == 0 && table.stderr.isEmpty, "\(table.stderr)")
        let rows = lines(table.stdout)
        #expect(rows.count == 101, "a header and the default limit of 100")
        #expect(rows[0].hasPrefix("TIME") && rows[0].contains("FROM -> TO"))
        #expect(rows[1].hasPrefix("2026-11-24T10:18:20Z  x.ping") && rows[1].contains("started -> failed"))
        #expect(rows[1].contains(alice) && rows[1].contains("upg_1099") && rows[1].hasSuffix("n=1099"))

        // Paged internally: 1 002 rows, newest first, each once.
        let json = try audit(["--json", "--limit", "5000"])
        #expect(json.status == 0)
        let events = try lines(json.stdout).map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        #expect(events.count == 1102)
        let ids = events.compactMap { $0["id"] as? Int }
        #expect(ids == ids.sorted(by: >) && Set(ids).count == 1102)
        #expect(events[0]["at"] as? String == "2026-11-24T10:18:20Z" && events[0]["from"] as? String == "started")
        #expect((events[0]["detail"] as? [String: String]) == ["n": "1099"])

        let bobs = lines(try audit(["--json", "--account", "BOB"]).stdout)
        #expect(bobs.count == 1 && bobs[0].contains(bob) && bobs[0].contains("account.created"))
        #expect(lines(try audit(["--json", "--type", "account.created"]).stdout).count == 2)
        // since inclusive, until exclusive; RFC 3339 or Unix seconds.
        let window = try audit(["--json", "--since", "2026-11-24T10:00:10Z", "--until", String(Self.start + 20)])
        #expect(window.status == 0)
        #expect(lines(window.stdout).count == 10)
        #expect(lines(window.stdout).first?.contains("\"n\":\"18\"") == true)
        #expect(lines(window.stdout).last?.contains("\"n\":\"9\"") == true)
        let none = try audit(["--type", "nothing.here"])
        #expect(none.status == 0 && lines(none.stdout).count == 1, "the header alone")
        #expect(try audit(["--json", "--since", "2030-01-01T00:00:00Z"]).stdout.isEmpty)
    }

    @Test("bad arguments exit 2, an unknown account 1, each with one line on stderr", arguments: Backend.all)
    func failures(_ backend: Backend) throws {
        let db = try backend.database(forProcesses: true)
        let url = try #require(db.url)
        _ = try seed(db.store)
        for (arguments, named) in [
            (["--since", "yesterday"], "--since"), (["--until", "2026-11-24"], "--until"),
            (["--limit", "0"], "--limit"),
            (["--limit", "x"], "--limit"), (["--account", "a\u{200B}b"], "--account"), (["--type", ""], "--type"),
        ] {
            let result = try runCLI(["audit"] + arguments, environment: ["UPGRADE_DB": url])
            #expect(result.status == 2, "\(arguments)")
            #expect(lines(result.stderr).count == 1 && result.stderr.contains(named), "\(arguments): \(result.stderr)")
            #expect(result.stdout.isEmpty)
        }
        let unknown = try runCLI(["audit", "--account", "nobody"], environment: ["UPGRADE_DB": url])
        #expect(unknown.status == 1 && unknown.stdout.isEmpty)
        #expect(unknown.stderr == "error: no account named 'nobody'\n")
        let option = try runCLI(["audit", "--bogus"], environment: ["UPGRADE_DB": url])
        #expect(option.status == 2 && option.stderr.hasPrefix("error: unknown option --bogus"))
    }

    @Test("accounts show prints the shared overview: open upgrades, the Apple credential state, the latest events")
    func accountsShow() throws {
        let db = try Backend.sqlite.database(forProcesses: true)
        let url = try #require(db.url)
        let (alice, _) = try seed(db.store)
        try db.store.write { tx in
            try tx.insertUpgradeSession(
                UpgradeSessionRecord(
                    id: "upg_open",
                    accountID: alice,
                    usernameKey: "alice",
                    serviceIdentifier: "s",
                    status: "stepUpRequired",
                    machine: "{}",
                    stateHash: nil,
                    nonceHash: nil,
                    linkedSub: nil,
                    createdAt: Self.start,
                    expiresAt: Self.start + 600,
                    updatedAt: Self.start
                )
            )
            try tx.insertAppleLink(
                AppleLinkRecord(
                    accountID: alice,
                    sub: "001.alice",
                    teamID: "TEAM",
                    clientID: "client",
                    email: nil,
                    isPrivateEmail: nil,
                    refreshTokenCiphertext: [1, 2, 3],
                    status: .revoked,
                    linkedAt: Self.start,
                    updatedAt: Self.start
                )
            )
        }
        let shown = try runCLI(["accounts", "show", "alice"], environment: ["UPGRADE_DB": url])
        #expect(shown.status == 0, "\(shown.stderr)")
        #expect(shown.stdout.contains("upgrade      upg_open stepUpRequired, expires 2026-11-24T10:10:00Z"))
        #expect(shown.stdout.contains("apple state  revoked"))
        #expect(shown.stdout.contains("audit trail  500 event(s)"))
        // The latest 500, printed oldest first: the last line is the newest event.
        #expect(lines(shown.stdout).last?.hasSuffix("n=1099") == true)
        #expect(lines(shown.stdout).contains { $0.hasSuffix("n=600") })
        #expect(!lines(shown.stdout).contains { $0.hasSuffix("n=599") })
    }
}
