import Foundation
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// Accounts stored under the old rule (trimmed and lowercased only): migration 7 re-keys the ones
/// that collide with nothing, and `db check` reports the rest instead of anything merging them.
@Suite("Usernames stored before the username profile")
struct UsernameMigrationTests {
    typealias H = UpgradeHarness

    /// A database as the previous binary left it (migrations 1-6), with accounts written as it wrote
    /// them: lowercased only, so look-alikes sit side by side.
    static func oldDatabase(_ path: String) throws -> SQLiteStore {
        let store = try SQLiteStore(path: path)
        _ = try store.migrate(now: H.now, through: 6)
        let rows: [(String, String)] = [
            ("a1", "carol"),
            ("a2", "\u{FF43}\u{FF41}\u{FF52}\u{FF4F}\u{FF4C}"),  // collides with carol
            ("a3", "jos\u{E9}"),
            ("a4", "jose\u{301}"),  // collides with jos\u{E9}
            ("a5", "ca\u{AD}rol"),  // refused
            ("a6", "rene\u{301}"),  // NFD, alone: re-keyed
            ("a7", "\u{FF44}\u{FF41}\u{FF56}\u{FF45}"),  // fullwidth dave, alone: re-keyed
            ("a8", "alice"),
            ("a9", "\u{FF45}\u{FF56}\u{FF45}"),  // two spellings of eve, neither stored as "eve"
            ("b9", "\u{FF45}v\u{FF45}"),
        ]
        try store.write { tx in
            let connection = (tx as! SQLiteTransaction).connection
            for (id, username) in rows {
                try connection.query(
                    "INSERT INTO accounts (id, username, credential_kind, created_at, updated_at) VALUES (?, ?, 'password', 1, 1)",
                    [.text(id), .text(username)]
                )
            }
        }
        return store
    }

    static func storedUsernames(_ store: SQLiteStore) throws -> [String: [UInt8]] {
        try store.read { tx in
            let rows = try (tx as! SQLiteTransaction).connection.query("SELECT id, username FROM accounts")
            return Dictionary(uniqueKeysWithValues: rows.map { ($0[0].string ?? "", Array(($0[1].string ?? "").utf8)) })
        }
    }

    @Test("db migrate re-keys what collides with nothing, with an audit row, and leaves collisions and refusals")
    func migrationRekeys() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try Self.oldDatabase(directory.appendingPathComponent("upgrade.db").path)
        let before = try Self.storedUsernames(store)
        #expect(try store.migrate(now: H.now + 5).map(\.version).contains(7))
        let after = try Self.storedUsernames(store)

        #expect(after["a6"] == Array("ren\u{E9}".utf8))
        #expect(after["a7"] == Array("dave".utf8))
        for id in ["a1", "a2", "a3", "a4", "a5", "a8", "a9", "b9"] {
            #expect(after[id] == before[id], "\(id) is left as it was")
        }
        let audit = try store.read { tx in
            try ["a6", "a7", "a2", "a4", "a9"].map { try tx.auditTrail(accountID: $0, limit: 10) }
        }
        #expect(audit[0].map(\.event) == ["account.username-rekeyed"])
        #expect(audit[1].map(\.event) == ["account.username-rekeyed"])
        #expect(audit[1].first?.detail["previous"] == "<U+FF44><U+FF41><U+FF56><U+FF45>")
        #expect(audit[2].isEmpty && audit[3].isEmpty && audit[4].isEmpty)
        let found = try store.read { tx in
            try (tx as! SQLiteTransaction).connection.query(
                "SELECT id FROM accounts WHERE username = ?",
                [.text("dave")]
            )
        }
        #expect(found.first?.first?.string == "a7")
    }

    @Test("db check lists collisions, refusals and pending changes (exit 1), and exits 0 on a clean database")
    func databaseCheck() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("old.db").path
        _ = try Self.oldDatabase(path)
        let db = "sqlite:" + path

        let first = try runCLI(["db", "check", "--db", db])
        #expect(first.status == 1, "\(first.stderr)")
        let lines = first.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains("collision: 2 accounts are all 'carol':"))
        #expect(lines.contains("  account a1 stored as 'carol'"))
        #expect(lines.contains("  account a2 stored as '<U+FF43><U+FF41><U+FF52><U+FF4F><U+FF4C>'"))
        #expect(lines.contains("collision: 2 accounts are all 'jos<U+00E9>':"))
        #expect(lines.contains("  account a4 stored as 'jose<U+0301>'"))
        #expect(lines.contains("collision: 2 accounts are all 'eve':"))
        #expect(lines.contains { $0.hasPrefix("refused: account a5 stored as 'ca<U+00AD>rol': U+00AD SOFT HYPHEN") })
        #expect(
            lines.contains(
                "change: account a7 stored as '<U+FF44><U+FF41><U+FF56><U+FF45>' becomes 'dave' (applied by 'upgrade-cli db migrate')"
            )
        )
        #expect(lines.contains { $0.hasPrefix("change: account a6 ") })
        // Before migration 18 there are no skeletons to compare.
        #expect(lines.contains { $0.hasPrefix("look-alikes: not compared: ") })
        #expect(
            lines.last
                == "10 account(s) checked against PRECIS UsernameCaseMapped (RFC 8265) and UTS #39: 3 collision group(s), 0 look-alike group(s), 1 refused, 2 to re-key"
        )

        let migrated = try runCLI(["db", "migrate", "--db", db])
        #expect(migrated.status == 0)
        #expect(migrated.stdout.contains("applied 0007 precis_usernames"))
        #expect(
            migrated.stdout.contains(
                "note: 3 username collision group(s), 0 look-alike group(s) and 1 refused username(s) need an operator"
            )
        )

        let second = try runCLI(["db", "check", "--db", db])
        #expect(second.status == 1)
        #expect(!second.stdout.contains("change:"), "the migration re-keyed them")
        // The look-alikes among them (NFC and NFD José, the two fullwidth eves) are these collisions.
        #expect(!second.stdout.contains("look-alike:"), "\(second.stdout)")
        #expect(second.stdout.contains("3 collision group(s), 0 look-alike group(s), 1 refused, 0 to re-key"))

        let clean = "sqlite:" + directory.appendingPathComponent("clean.db").path
        #expect(try runCLI(["db", "migrate", "--db", clean]).status == 0)
        #expect(try runCLI(["accounts", "add", "Alice", "--db", clean], stdin: "pw").status == 0)
        let ok = try runCLI(["db", "check", "--db", clean])
        #expect(ok.status == 0)
        #expect(
            ok.stdout
                == "1 account(s) checked against PRECIS UsernameCaseMapped (RFC 8265) and UTS #39: 0 collision group(s), 0 look-alike group(s), 0 refused, 0 to re-key\n"
        )
    }
}
