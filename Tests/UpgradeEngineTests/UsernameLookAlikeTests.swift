import Foundation
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// Look-alike usernames through the paths that use them: account creation, login and lockout. Only
/// the store, service and CLI surfaces are used here.
@Suite("Look-alike usernames are one account or refused")
struct UsernameLookAlikeTests {
    typealias H = UpgradeHarness
    let now = UpgradeHarness.now

    static let nfcJose = "Jos\u{E9}"
    static let nfdJose = "Jose\u{301}"

    /// The failure `body` threw, or nil (recording an issue) if it threw none.
    func failure(_ body: () throws -> some Any) -> ServiceFailure? {
        do {
            _ = try body()
            Issue.record("expected a failure")
            return nil
        } catch {
            #expect(error is ServiceFailure, "\(error)")
            return error as? ServiceFailure
        }
    }

    @Test(
        "a look-alike spelling signs in to the same account",
        arguments: [
            ("carol", "\u{FF43}\u{FF41}\u{FF52}\u{FF4F}\u{FF4C}"),  // fullwidth
            ("carol", "\u{FF23}\u{FF21}\u{FF32}\u{FF2F}\u{FF2C}"),  // fullwidth capitals
            (nfcJose, nfdJose),
            (nfdJose, "JOS\u{C9}"),
            (
                "\u{039F}\u{0394}\u{03A5}\u{03A3}\u{03A3}\u{0395}\u{03A5}\u{03A3}",
                "\u{03BF}\u{03B4}\u{03C5}\u{03C3}\u{03C3}\u{03B5}\u{03C5}\u{03C2}"
            ),
        ]
    )
    func lookAlikeLogin(created: String, typed: String) throws {
        let h = try UpgradeHarness()
        try h.addAccount(created, password: "pw-1")
        let answer = try h.service.start(username: typed, password: "pw-1", serviceIdentifier: "s", now: now)
        #expect(answer.status == .awaitingAppleCredential)
    }

    @Test("failures under different spellings count against one username and lock it together")
    func lockoutCountsSpellingsTogether() throws {
        let h = try UpgradeHarness()
        try h.addAccount("carol", password: "right")
        let spellings = ["carol", "\u{FF43}\u{FF41}\u{FF52}\u{FF4F}\u{FF4C}", "CAROL"]
        var clock = now
        for spelling in spellings {
            clock += 120
            #expect(
                failure {
                    try h.service.start(username: spelling, password: "wrong", serviceIdentifier: "s", now: clock)
                }?
                .kind == .invalidCredentials
            )
        }
        #expect(try h.store.read { try $0.throttle(usernameKey: "carol") }?.failures == 3)
        // The third failure starts the delay for every spelling, the fullwidth one included.
        let delayed = failure {
            try h.service.start(username: "\u{FF23}AROL", password: "right", serviceIdentifier: "s", now: clock)
        }
        #expect(delayed?.kind == .rateLimited)
        // NFC and NFD José share one count too, known account or not.
        for spelling in [Self.nfcJose, Self.nfdJose] {
            clock += 120
            _ = failure { try h.service.start(username: spelling, password: "x", serviceIdentifier: "s", now: clock) }
        }
        #expect(try h.store.read { try $0.throttle(usernameKey: "jos\u{E9}") }?.failures == 2)
    }

    @Test(
        "a username the profile refuses is a validation problem at login, naming the code point, and counts nothing",
        arguments: [
            ("ca\u{AD}rol", "U+00AD SOFT HYPHEN"),
            ("ca\u{2060}rol", "U+2060 WORD JOINER"),
            ("\u{FEFF}carol", "U+FEFF ZERO WIDTH NO-BREAK SPACE"),
            ("carol\u{202E}", "U+202E RIGHT-TO-LEFT OVERRIDE"),
            ("car\u{200D}ol", "U+200D ZERO WIDTH JOINER"),
            ("c\u{430}rol", "mixes scripts Latin and Cyrillic (U+0430 CYRILLIC SMALL LETTER A)"),
        ]
    )
    func refusedAtLogin(typed: String, named: String) throws {
        let h = try UpgradeHarness()
        try h.addAccount("carol", password: "right")
        let refused = failure {
            try h.service.start(username: typed, password: "right", serviceIdentifier: "s", now: now)
        }
        #expect(refused?.kind == .validation)
        #expect(refused?.message.contains(named) == true, "\(refused?.message ?? "")")
        #expect(refused?.message.contains("\n") == false)
        // The same answer whether or not an account looks like it: nothing about accounts is read.
        let h2 = try UpgradeHarness()
        let unknown = failure {
            try h2.service.start(username: typed, password: "right", serviceIdentifier: "s", now: now)
        }
        #expect(unknown?.message == refused?.message)
        let (throttles, sessions) = try h.store.read { tx in
            let connection = (tx as! SQLiteTransaction).connection
            return (
                try connection.scalarInt("SELECT count(*) FROM login_throttle"),
                try connection.scalarInt("SELECT count(*) FROM upgrade_sessions")
            )
        }
        #expect(throttles == 0 && sessions == 0)
    }

    @Test(
        "the store refuses a second account under a look-alike spelling",
        arguments: [
            ("carol", "\u{FF43}\u{FF41}\u{FF52}\u{FF4F}\u{FF4C}"),
            (nfcJose, nfdJose),
            (nfdJose, "jos\u{E9}"),
        ]
    )
    func storeRefusesLookAlike(first: String, second: String) throws {
        let h = try UpgradeHarness()
        try h.addAccount(first, password: "a")
        #expect {
            try h.addAccount(second, password: "b")
        } throws: { error in
            (error as? StorageError)?.code == .uniqueViolation
        }
    }

    @Test(
        "the store refuses a username the profile refuses",
        arguments: ["ca\u{AD}rol", "ca\u{2060}rol", "\u{FEFF}carol", "carol\u{202E}", "car\u{200D}ol", "a b"]
    )
    func storeRefusesDisallowed(username: String) throws {
        let h = try UpgradeHarness()
        #expect {
            try h.addAccount(username, password: "a")
        } throws: { error in
            (error as? StorageError)?.code == .constraint
        }
    }

    @Test("accounts add refuses a look-alike of an existing account and names a refused code point")
    func accountsAdd() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let db = "sqlite:" + directory.appendingPathComponent("cli.db").path
        #expect(try runCLI(["db", "migrate", "--db", db]).status == 0)

        #expect(try runCLI(["accounts", "add", Self.nfcJose, "--db", db], stdin: "pw").status == 0)
        let nfd = try runCLI(["accounts", "add", Self.nfdJose, "--db", db], stdin: "pw")
        #expect(nfd.status == 1)
        #expect(nfd.stderr == "error: an account named 'jos\u{E9}' already exists\n")

        #expect(try runCLI(["accounts", "add", "carol", "--db", db], stdin: "pw").status == 0)
        #expect(
            try runCLI(["accounts", "add", "\u{FF43}\u{FF41}\u{FF52}\u{FF4F}\u{FF4C}", "--db", db], stdin: "pw").status
                == 1
        )
        for (typed, named) in [
            ("ca\u{AD}rol", "U+00AD SOFT HYPHEN"), ("ca\u{2060}rol", "U+2060 WORD JOINER"),
            ("\u{FEFF}carol", "U+FEFF ZERO WIDTH NO-BREAK SPACE"), ("carol\u{202E}", "U+202E RIGHT-TO-LEFT OVERRIDE"),
            ("car\u{200D}ol", "U+200D ZERO WIDTH JOINER"),
        ] {
            let refused = try runCLI(["accounts", "add", typed, "--db", db], stdin: "pw")
            #expect(refused.status == 2)
            #expect(refused.stderr.hasPrefix("error: USER: \(named) is not allowed"), "\(refused.stderr)")
            #expect(refused.stderr.split(separator: "\n").count == 1, "one line")
        }
        let shown = try runCLI(["accounts", "show", Self.nfdJose.uppercased(), "--db", db])
        #expect(shown.status == 0)
        #expect(shown.stdout.hasPrefix("account      jos\u{E9} (id "))
    }

    @Test("accounts add refuses alice's look-alikes, naming the account it looks like", arguments: Backend.all)
    func accountsAddLookAlikes(_ backend: Backend) throws {
        let database = try backend.database(forProcesses: true)
        let db = try #require(database.url)
        let alice = try runCLI(["accounts", "add", "alice", "--db", db], stdin: "pw")
        #expect(alice.status == 0, "\(alice.stderr)")
        let id = try #require(try database.store.read { try $0.account(username: Username("alice")) }?.id)

        let alpha = try runCLI(["accounts", "add", "\u{251}lice", "--db", db], stdin: "pw")
        #expect(alpha.status == 1)
        #expect(
            alpha.stderr
                == "error: '<U+0251>lice' looks like the existing account 'alice' (id \(id)): their confusable skeletons (UTS #39) are equal; choose another username\n"
        )
        for (typed, named) in [
            ("\u{430}lice", "U+0430 CYRILLIC SMALL LETTER A"), ("alic\u{435}", "U+0435 CYRILLIC SMALL LETTER IE"),
        ] {
            let mixed = try runCLI(["accounts", "add", typed, "--db", db], stdin: "pw")
            #expect(mixed.status == 2)
            #expect(
                mixed.stderr.hasPrefix("error: USER: the username mixes scripts Latin and Cyrillic (\(named)): "),
                "\(mixed.stderr)"
            )
            #expect(mixed.stderr.split(separator: "\n").count == 1, "one line")
        }
        // Single-script names in other scripts are created beside it.
        for name in ["\u{438}\u{432}\u{430}\u{43D}", "\u{305F}\u{306A}\u{304B}", "Jos\u{E9}"] {
            #expect(try runCLI(["accounts", "add", name, "--db", db], stdin: "pw").status == 0, "\(name)")
        }
        let names = try database.store.read { try $0.accounts(afterID: nil, limit: 10) }.map(\.username).sorted()
        #expect(names == ["alice", "jos\u{E9}", "\u{438}\u{432}\u{430}\u{43D}", "\u{305F}\u{306A}\u{304B}"].sorted())
    }

    @Test(
        "db check lists look-alikes and mixed-script names an older binary stored, and exits 1",
        arguments: Backend.all
    )
    func databaseCheckLookAlikes(_ backend: Backend) throws {
        let database = try StoreConformanceTests.oldDatabaseWithLookAlikes(backend, forProcesses: true)
        let db = try #require(database.url)

        let before = try runCLI(["db", "check", "--db", db])
        #expect(before.status == 1)
        #expect(before.stdout.contains("look-alikes: not compared: "), "\(before.stdout)")

        let migrated = try runCLI(["db", "migrate", "--db", db])
        #expect(migrated.status == 0, "\(migrated.stderr)")
        #expect(migrated.stdout.contains("applied 0018 username_skeletons"))
        #expect(
            migrated.stdout.contains(
                "note: 0 username collision group(s), 2 look-alike group(s) and 2 refused username(s) need an operator"
            ),
            "\(migrated.stdout)"
        )

        let check = try runCLI(["db", "check", "--db", db])
        #expect(check.status == 1)
        let lines = check.stdout.split(separator: "\n").map(String.init)
        let expected = [
            "look-alike: 4 accounts have the confusable skeleton 'alice':",
            "  account a1 stored as 'alice'",
            "  account a2 stored as '<U+0430>lice'",
            "  account a3 stored as 'alic<U+0435>'",
            "  account a4 stored as '<U+0251>lice'",
            "look-alike: 2 accounts have the confusable skeleton 'userl':",
            "  account c1 stored as 'user1'",
            "  account c2 stored as 'userl'",
        ]
        #expect(Array(lines.prefix(expected.count)) == expected, "\(check.stdout)")
        #expect(
            lines.contains {
                $0.hasPrefix(
                    "refused: account a2 stored as '<U+0430>lice': the username mixes scripts Latin and Cyrillic (U+0430 CYRILLIC SMALL LETTER A)"
                )
            }
        )
        #expect(
            lines.contains { $0.hasPrefix("refused: account a3 stored as 'alic<U+0435>': the username mixes scripts") }
        )
        #expect(
            lines.last
                == "8 account(s) checked against PRECIS UsernameCaseMapped (RFC 8265) and UTS #39: 0 collision group(s), 2 look-alike group(s), 2 refused, 0 to re-key"
        )
    }
}
