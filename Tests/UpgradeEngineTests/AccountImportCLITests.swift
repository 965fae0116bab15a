import Foundation
import Glibc
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// `upgrade-cli accounts import` as a process: exit codes, the report, `--dry-run`, standard input,
/// and runs killed with SIGKILL at random moments.
@Suite("upgrade-cli accounts import")
struct AccountImportCLITests {
    static let hash = PasswordRehashTests.legacy[0].hash

    static func directory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("import-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    static func count(_ db: TestDatabase, _ sql: String) throws -> Int64 {
        try db.store.read { tx in try TestDatabase.raw(tx, sql).first?.first?.int ?? -1 }
    }

    @Test("exit codes, the report file, CSV from standard input, and a dry run that creates no database")
    func exitCodesAndDryRun() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("users.csv").path
        try "username,passwordHash,email\nalice,\(Self.hash),a@example.com\n\"bob\",\(Self.hash),\nbad user,x,\n"
            .write(toFile: file, atomically: true, encoding: .utf8)
        let missing = dir.appendingPathComponent("none.db").path

        let dry = try runCLI(["accounts", "import", file, "--dry-run", "--db", "sqlite:" + missing])
        #expect(dry.status == 1, "\(dry.stderr)")
        #expect(dry.stdout.contains("dry run: would have created 2, updated 0, skipped 0, failed 1"))
        #expect(!FileManager.default.fileExists(atPath: missing), "a dry run creates no database file")
        // Without a report the refusal is explained on standard error.
        #expect(dry.stderr.contains("line 4 (bad user): username: "), "\(dry.stderr)")

        let db = dir.appendingPathComponent("real.db").path
        #expect(try runCLI(["db", "migrate", "--db", "sqlite:" + db]).status == 0)
        let report = dir.appendingPathComponent("report.jsonl").path
        let run = try runCLI(["accounts", "import", file, "--db", "sqlite:" + db, "--report", report])
        #expect(run.status == 1)
        #expect(!run.stderr.contains("line 4"), "with a report, the report says it")
        let lines = try String(contentsOfFile: report, encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(lines.count == 3)
        #expect(lines[0] == #"{"line":2,"username":"alice","action":"created","reason":null}"#)
        #expect(lines[2].hasPrefix(#"{"line":4,"username":"bad user","action":"error","reason":"username: "#))

        // The same rows from standard input: already there, so skipped; nothing failed this time.
        let stdin = try runCLI(
            ["accounts", "import", "-", "--format", "csv", "--db", "sqlite:" + db],
            stdin: "username,passwordHash\nalice,\(Self.hash)\n"
        )
        #expect(stdin.status == 0, "\(stdin.stderr)")
        #expect(stdin.stdout.contains("created 0, updated 0, skipped 1, failed 0"))
        // `--concurrency` checks a batch's rows on several threads; the writer is still one.
        let parallel = try runCLI(
            ["accounts", "import", "-", "--format", "csv", "--concurrency", "4", "--db", "sqlite:" + db],
            stdin: "username,passwordHash\nalice,\(Self.hash)\ncarol,\(Self.hash)\n"
        )
        #expect(parallel.status == 0, "\(parallel.stderr)")
        #expect(parallel.stdout.contains("created 1, updated 0, skipped 1, failed 0"), "\(parallel.stdout)")

        for (arguments, message) in [
            (["accounts", "import", file, "--on-conflict", "merge"], "--on-conflict must be skip or update"),
            (["accounts", "import", dir.appendingPathComponent("users.txt").path], "cannot tell the format"),
            (["accounts", "import", dir.appendingPathComponent("gone.csv").path], "cannot read"),
            (["accounts", "import", file, "--concurrency", "0"], "--concurrency must be between 1 and 64"),
            (["accounts", "import", file, "--concurrency", "65"], "--concurrency must be between 1 and 64"),
        ] {
            let refused = try runCLI(arguments + ["--db", "sqlite:" + db])
            #expect(refused.status == 2, "\(arguments)")
            #expect(refused.stderr.hasPrefix("error: ") && refused.stderr.contains(message), "\(refused.stderr)")
        }
        let header = dir.appendingPathComponent("header.csv").path
        try "user,passwordHash\n".write(toFile: header, atomically: true, encoding: .utf8)
        let badHeader = try runCLI(["accounts", "import", header, "--db", "sqlite:" + db])
        #expect(badHeader.status == 2)
        #expect(badHeader.stderr.split(separator: "\n").count == 1, "one line: \(badHeader.stderr)")
    }

    @Test("without a report, the first 20 refused rows are printed with their reasons, then a count")
    func refusalsOnStandardError() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("users.jsonl").path
        let rows = (1...25).map { #"{"username":"user\#($0)","passwordHash":"not a hash"}"# }
        try rows.joined(separator: "\n").write(toFile: file, atomically: true, encoding: .utf8)
        let db = "sqlite:" + dir.appendingPathComponent("real.db").path
        #expect(try runCLI(["db", "migrate", "--db", db]).status == 0)
        let run = try runCLI(["accounts", "import", file, "--db", db])
        #expect(run.status == 1)
        let lines = run.stderr.split(separator: "\n").filter { $0.hasPrefix("line ") }
        #expect(lines.count == 20, "\(run.stderr)")
        #expect(lines.first?.hasPrefix("line 1 (user1): passwordHash: ") == true, "\(run.stderr)")
        #expect(run.stderr.contains("... and 5 more refused row(s); --report FILE lists every row with its reason"))
    }

    @Test(
        "accounts show prints the email and display name an import brought; accounts delete removes them",
        arguments: Backend.all
    )
    func showAndDeleteProfile(_ backend: Backend) throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("users.jsonl").path
        try """
        {"username":"alice","passwordHash":"\(Self.hash)","email":"alice@example.com","displayName":"Alice Ä. Example"}
        {"username":"bob","passwordHash":"\(Self.hash)"}

        """.write(toFile: file, atomically: true, encoding: .utf8)
        let db = try backend.database(forProcesses: true)
        let environment = ["UPGRADE_DB": try #require(db.url)]
        #expect(try runCLI(["accounts", "import", file], environment: environment).status == 0)

        let alice = try runCLI(["accounts", "show", "alice"], environment: environment)
        #expect(alice.status == 0, "\(alice.stderr)")
        let lines = alice.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains("email        alice@example.com (imported)"), "\(alice.stdout)")
        #expect(lines.contains("display name Alice Ä. Example (imported)"), "\(alice.stdout)")
        let bob = try runCLI(["accounts", "show", "bob"], environment: environment)
        #expect(bob.status == 0, "\(bob.stderr)")
        #expect(!bob.stdout.contains("email ") && !bob.stdout.contains("display name"), "\(bob.stdout)")

        let id = try #require(try db.store.read { try $0.account(username: Username("alice")) }?.id)
        #expect(try db.store.read { try $0.accountProfile(accountID: id) }?.email == "alice@example.com")
        let deleted = try runCLI(["accounts", "delete", "alice", "--yes"], environment: environment)
        #expect(deleted.status == 0, "\(deleted.stderr)")
        #expect(try db.store.read { try $0.accountProfile(accountID: id) } == nil, "the profile went with the account")
        #expect(try Self.count(db, "SELECT COUNT(*) FROM account_profiles") == 1, "bob's stays")
    }

    @Test("killed with SIGKILL at random moments, reruns import every row exactly once", arguments: Backend.all)
    func killedAndRerun(_ backend: Backend) throws {
        // Enough rows that each of the four runs is killed before it ends (the debug build imports
        // about 14,000 rows a second in batches of 100).
        let rows = 30000
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("large.jsonl").path
        var text = ""
        for index in 0..<rows { text += "{\"username\":\"user\(index)\",\"passwordHash\":\"\(Self.hash)\"}\n" }
        // One username repeated late in the file: the later line stays the duplicate across kills.
        text += "{\"username\":\"user17\",\"passwordHash\":\"\(Self.hash)\"}\n"
        try text.write(toFile: file, atomically: true, encoding: .utf8)

        let db = try backend.database(forProcesses: true)
        let environment = ["UPGRADE_DB": try #require(db.url), "UPGRADE_JOB_LEASE_SECONDS": "2"]
        let arguments = ["accounts", "import", file, "--batch-size", "100"]
        var generator = SystemRandomNumberGenerator()
        for attempt in 0..<4 {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: try UpgradeCLI.executable())
            process.arguments = arguments
            process.environment = ["PATH": "/usr/bin:/bin"].merging(environment) { $1 }
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            usleep(UInt32.random(in: 20_000...500_000, using: &generator))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            if attempt == 0 {
                let committed = try Self.count(db, "SELECT COALESCE(MAX(last_line), 0) FROM import_runs")
                #expect(committed < Int64(rows), "the first run was killed before its end")
            }
            // The killed run's lease lapses two seconds after its last heartbeat.
            sleep(3)
        }
        let final = try runCLI(
            arguments + ["--report", dir.appendingPathComponent("r.jsonl").path],
            environment: environment
        )
        #expect(final.status == 1, "the duplicate line fails: \(final.stdout) \(final.stderr)")

        #expect(try Self.count(db, "SELECT COUNT(*) FROM accounts") == Int64(rows))
        #expect(try Self.count(db, "SELECT COUNT(DISTINCT username) FROM accounts") == Int64(rows))
        #expect(try Self.count(db, "SELECT COUNT(*) FROM audit_events WHERE event = 'account.imported'") == Int64(rows))
        #expect(
            try Self.count(db, "SELECT COUNT(DISTINCT account_id) FROM audit_events WHERE event = 'account.imported'")
                == Int64(rows)
        )
        #expect(try Self.count(db, "SELECT COUNT(*) FROM password_credentials") == Int64(rows))
        #expect(try Self.count(db, "SELECT last_line FROM import_runs") == Int64(rows + 1))
        #expect(try Self.count(db, "SELECT failed FROM import_runs") == 1)
        #expect(try Self.count(db, "SELECT COUNT(*) FROM import_runs WHERE finished_at IS NOT NULL") == 1)
        let report = try String(contentsOfFile: dir.appendingPathComponent("r.jsonl").path, encoding: .utf8)
        #expect(report.split(separator: "\n").count == rows + 1, "one report line per input row")

        // Once more: a no-op.
        let again = try runCLI(arguments, environment: environment)
        #expect(again.status == 1, "the import still has its failed row")
        #expect(again.stdout.contains("created 0, updated 0, skipped 0, failed 0; \(rows + 1) row(s) committed"))
        #expect(try Self.count(db, "SELECT COUNT(*) FROM audit_events") == Int64(rows))
    }
}
