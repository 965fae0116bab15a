import Foundation
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// `upgrade-cli transfer ...`: usage and configuration errors (exit 2, one line naming what is
/// wrong), an unreachable Apple, and `transfer status` on a database a transfer ran on.
@Suite("upgrade-cli transfer")
struct TransferCLITests {
    /// A directory with a valid `.p8` key and the environment a transfer command needs.
    final class Setup {
        let directory: URL
        let environment: [String: String]

        init() throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "siwa-transfer-cli-\(UUID().uuidString)"
            )
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let keyFile = directory.appendingPathComponent("AuthKey.p8")
            try writeOwnerOnly(P256PrivateKey().pemRepresentation, to: keyFile.path)
            environment = [
                "APPLE_TEAM_ID": "TEAMA12345", "APPLE_KEY_ID": "KEY1234567", "APPLE_PRIVATE_KEY_FILE": keyFile.path,
                "APPLE_CLIENT_IDS": "com.example.app,com.example.web",
                "UPGRADE_DB": "sqlite:" + directory.appendingPathComponent("cli.db").path,
            ]
        }

        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

        /// The environment of a run configured as team B on `world`'s database, with `apple`
        /// (opened here) answering team-token requests.
        func teamB(_ world: TransferWorld, apple: TransferLeaseCLITests.TokenGate) throws -> [String: String] {
            apple.open()
            return environment.merging([
                "APPLE_TEAM_ID": TransferWorld.teamB, "UPGRADE_DB": try #require(world.database.url),
                "APPLE_BASE_URL": apple.baseURL,
            ]) { $1 }
        }

        deinit { try? FileManager.default.removeItem(at: directory) }
    }

    @Test(
        "usage errors: exit 2 with the reason and the usage",
        arguments: [
            (["transfer", "prepare"], "error: missing required option --target-team"),
            (["transfer", "prepare", "--target-team", "teamb67890"], "error: --target-team must be"),
            (
                ["transfer", "prepare", "--target-team", "TEAMB67890", "--concurrency", "0"],
                "error: --concurrency must be"
            ),
            (
                ["transfer", "prepare", "--target-team", "TEAMB67890", "--concurrency", "65"],
                "error: --concurrency must be"
            ),
            (["transfer", "prepare", "--target-team", "TEAMB67890", "--limit", "0"], "error: --limit must be"),
            (["transfer", "prepare", "--target-team", "TEAMB67890", "--bogus"], "error: unknown option --bogus"),
            (
                ["transfer", "prepare", "--target-team", "TEAMA12345"],
                "error: --target-team TEAMA12345 is this deployment's own team"
            ),
            (
                ["transfer", "prepare", "--target-team", "TEAMB67890", "--client-id", "com.other"],
                "error: --client-id com.other is not in APPLE_CLIENT_IDS"
            ),
            (["transfer", "complete"], "error: missing required option --accepted-at"),
            (
                ["transfer", "complete", "--accepted-at", "yesterday"],
                "error: --accepted-at must be Unix seconds or ISO 8601"
            ),
            (["transfer", "complete", "--accepted-at", "4102444800"], "error: --accepted-at is in the future"),
            (["transfer", "status", "extra"], "error: unexpected argument 'extra'"),
        ]
    )
    func usage(arguments: [String], message: String) throws {
        let setup = try Setup()
        let result = try runCLI(arguments, environment: setup.environment)
        #expect(result.status == 2, "\(arguments)")
        #expect(result.stderr.hasPrefix(message), "\(arguments): \(result.stderr)")
        #expect(result.stderr.contains("usage: upgrade-cli transfer"))
        #expect(!FileManager.default.fileExists(atPath: setup.path("cli.db")), "bad input opens no database")
    }

    @Test("missing or malformed configuration: exit 2 and one line naming the variable")
    func configuration() throws {
        let setup = try Setup()
        let garbage = setup.path("garbage.p8")
        try writeOwnerOnly("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", to: garbage)
        // The team's key, readable by group and others: refused before it is parsed.
        let readable = setup.path("readable.p8")
        try Data(P256PrivateKey().pemRepresentation.utf8).write(to: URL(fileURLWithPath: readable))
        chmod(readable, 0o644)
        let cases: [(change: [String: String], remove: String?, message: String)] = [
            ([:], "APPLE_TEAM_ID", "error: APPLE_TEAM_ID is not set"),
            (["APPLE_TEAM_ID": "team"], nil, "error: APPLE_TEAM_ID must be 10 characters"),
            ([:], "APPLE_KEY_ID", "error: APPLE_KEY_ID is not set"),
            ([:], "APPLE_PRIVATE_KEY_FILE", "error: APPLE_PRIVATE_KEY_FILE is not set"),
            (["APPLE_PRIVATE_KEY_FILE": setup.path("missing.p8")], nil, "error: APPLE_PRIVATE_KEY_FILE="),
            (["APPLE_PRIVATE_KEY_FILE": garbage], nil, "error: APPLE_PRIVATE_KEY_FILE=\(garbage): not a P-256"),
            (
                ["APPLE_PRIVATE_KEY_FILE": readable], nil,
                "error: APPLE_PRIVATE_KEY_FILE=\(readable): has mode 0644; group and others must have no access: run chmod 600 on it",
            ),
            ([:], "APPLE_CLIENT_IDS", "error: APPLE_CLIENT_IDS is not set"),
            (["APPLE_CLIENT_IDS": "a b"], nil, "error: APPLE_CLIENT_IDS must list"),
            (["APPLE_BASE_URL": "http://appleid.example.com"], nil, "error: APPLE_BASE_URL: must be https://"),
        ]
        for item in cases {
            var environment = setup.environment.merging(item.change) { $1 }
            if let remove = item.remove { environment[remove] = nil }
            for command in [["prepare", "--target-team", "TEAMB67890"], ["complete", "--accepted-at", "1750000000"]] {
                let result = try runCLI(["transfer"] + command, environment: environment)
                #expect(result.status == 2, "\(item.message)")
                #expect(result.stderr.hasPrefix(item.message), "\(result.stderr)")
                #expect(result.stderr.split(separator: "\n").count == 1, "one line: \(result.stderr)")
            }
        }
        #expect(!FileManager.default.fileExists(atPath: setup.path("cli.db")))
    }

    @Test("Apple unreachable: the batch stops before any row, says why in one line, exits 1")
    func appleUnreachable() throws {
        let setup = try Setup()
        #expect(try runCLI(["db", "migrate"], environment: setup.environment).status == 0)
        let report = setup.path("report.jsonl")
        // Port 1 on loopback refuses connections: every attempt fails at once and retries are bounded.
        let result = try runCLI(
            ["transfer", "prepare", "--target-team", "TEAMB67890", "--report", report],
            environment: setup.environment.merging(["APPLE_BASE_URL": "http://127.0.0.1:1"]) { $1 }
        )
        #expect(result.status == 1)
        #expect(result.stderr.contains("Apple could not be reached for a team access token"))
        #expect(result.stderr.split(separator: "\n").count == 1, "one line: \(result.stderr)")
        #expect(result.stdout.contains("0 rows"))
    }

    @Test("transfer status: counts per state, accounts not touched, the window; --json for scripts")
    func status() async throws {
        let world = try TransferWorld()
        // In account order: user0 revoked at Apple fails, user1 and user2 are prepared, the limit
        // leaves user3 untouched; then user1 is completed.
        let users = try (0..<4).map { try world.addLinkedUser("user\($0)") }
        try world.emulator.revokeConsent(userID: users[0].appleUserID, clientID: TransferWorld.clientID)
        _ = try await world.prepare(TransferWorld.options(concurrency: 1, limit: 3))
        let windowEndsAt = try world.transferApp()
        _ = try await world.complete(windowEndsAt: windowEndsAt, TransferWorld.options(concurrency: 1, limit: 1))
        let db = try #require(world.database.url)

        let result = try runCLI(["transfer", "status", "--db", db])
        #expect(result.status == 0, "\(result.stderr)")
        func shows(_ name: String, _ count: Int) -> Bool {
            result.stdout.split(separator: "\n").contains {
                $0.split(separator: " ").map(String.init) == name.split(separator: " ").map(String.init) + ["\(count)"]
            }
        }
        #expect(shows("not touched", 1), "\(result.stdout)")
        #expect(shows("transferFailed", 1) && shows("transferPrepared", 1) && shows("transferred", 1))
        // The untouched account is `linked`, as the machine has it, and counted as not touched.
        #expect(shows("linked", 1) && shows("revoked", 0) && shows("deleted", 0))
        let iso = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: TimeInterval(windowEndsAt)))
        #expect(result.stdout.contains("window") && result.stdout.contains(iso), "\(result.stdout)")

        let json = try runCLI(["transfer", "status", "--json", "--db", db])
        #expect(json.status == 0)
        let object = try JSONValue.parse(Array(json.stdout.utf8))
        #expect(object["notTouched"] == .integer(1) && object["linked"] == .integer(1))
        #expect(object["transferred"] == .integer(1))
        #expect(object["windowEndsAt"] == .integer(windowEndsAt))
        for user in users {
            #expect(!json.stdout.contains(user.subA) && !result.stdout.contains(user.subA))
        }
    }

    @Test("prepare with another team's settings skips every account, and the summary and a hint say why")
    func preparedWithTheOtherTeamsSettings() async throws {
        let world = try TransferWorld()
        for index in 0..<3 { try world.addLinkedUser("user\(index)") }
        // The accounts are linked under team A; this run is configured as team B.
        let (setup, apple) = (try Setup(), try TransferLeaseCLITests.TokenGate())
        let environment = try setup.teamB(world, apple: apple)
        let result = try runCLI(
            ["transfer", "prepare", "--target-team", "TEAMC12345", "--dry-run", "--client-id", TransferWorld.clientID],
            environment: environment
        )
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("3 skipped (other-team 3)"), "\(result.stdout)")
        #expect(result.stdout.contains("hint: every account visited is linked under another team"), "\(result.stdout)")
        #expect(try world.transferRecordCount() == 0)
    }

    @Test("a later transfer: prepare names the accounts left behind and status counts them apart")
    func laterTransfer() async throws {
        let world = try TransferWorld()
        let moved = try await TransferServiceLaterTransferTests.moveToB(world)
        let (setup, apple) = (try Setup(), try TransferLeaseCLITests.TokenGate())
        let environment = try setup.teamB(world, apple: apple)
        // The CLI's clock is the real one: A -> B's window closed long ago.
        let dry = try runCLI(
            [
                "transfer", "prepare", "--target-team", TransferWorld.teamC, "--dry-run", "--client-id",
                TransferWorld.clientID,
            ],
            environment: environment
        )
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(dry.stdout.contains("3 would-run"), "\(dry.stdout)")
        #expect(dry.stdout.contains("skipped (stranded 1)"), "\(dry.stdout)")
        #expect(dry.stdout.contains("hint: 1 account was never migrated"), "\(dry.stdout)")
        #expect(try world.store.read { try $0.retiredTransferRecords(accountID: moved.u1.accountID) }.isEmpty)

        world.advance(TransferStateMachine.windowLength)
        _ = try await world.prepare(by: world.recipient, for: TransferWorld.teamC)
        let json = try runCLI(["transfer", "status", "--json", "--db", try #require(world.database.url)])
        #expect(json.status == 0, "\(json.stderr)")
        let object = try JSONValue.parse(Array(json.stdout.utf8))
        #expect(object["transferPrepared"] == .integer(3), "\(json.stdout)")
        #expect(object["stranded"] == .integer(1) && object["notTouched"] == .integer(0), "\(json.stdout)")
        #expect(object["transferred"] == .integer(0))
    }

    @Test("complete given another acceptance time than an earlier run warns; status lists both windows")
    func otherAcceptanceTime() async throws {
        let world = try TransferWorld()
        for index in 0..<2 { try world.addLinkedUser("user\(index)") }
        _ = try await world.prepare(TransferWorld.options(concurrency: 1))
        let windowEndsAt = try world.transferApp()
        _ = try await world.complete(windowEndsAt: windowEndsAt, TransferWorld.options(concurrency: 1, limit: 1))
        let db = try #require(world.database.url)
        let (setup, apple) = (try Setup(), try TransferLeaseCLITests.TokenGate())
        let environment = try setup.teamB(world, apple: apple)
        let acceptedAt = windowEndsAt - TransferStateMachine.windowLength + 86_400
        let result = try runCLI(
            [
                "transfer", "complete", "--accepted-at", "\(acceptedAt)", "--dry-run",
                "--client-id", TransferWorld.clientID,
            ],
            environment: environment
        )
        let recorded = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: TimeInterval(windowEndsAt)))
        #expect(
            result.stderr.contains("warning: an earlier run recorded the window as ending \(recorded)"),
            "\(result.stderr)"
        )
        let same = try runCLI(
            [
                "transfer", "complete", "--accepted-at", "\(windowEndsAt - TransferStateMachine.windowLength)",
                "--dry-run", "--client-id", TransferWorld.clientID,
            ],
            environment: environment
        )
        #expect(!same.stderr.contains("an earlier run"), "\(same.stderr)")

        let status = try runCLI(["transfer", "status", "--json", "--db", db])
        let object = try JSONValue.parse(Array(status.stdout.utf8))
        #expect(object["windowEndsAt"] == .integer(windowEndsAt))
        #expect(object["otherWindows"] == .array([]))
    }

    @Test("transfer status refuses a database with pending migrations, and help lists the commands")
    func statusNeedsMigratedDatabase() throws {
        let setup = try Setup()
        let missing = try runCLI(["transfer", "status"], environment: setup.environment)
        #expect(missing.status == 2)
        #expect(missing.stderr.hasPrefix("error: no database at sqlite:\(setup.path("cli.db"))"))
        #expect(!FileManager.default.fileExists(atPath: setup.path("cli.db")), "no stray file")
        // An empty file is an SQLite database without a schema.
        #expect(FileManager.default.createFile(atPath: setup.path("cli.db"), contents: nil))
        let result = try runCLI(["transfer", "status"], environment: setup.environment)
        #expect(result.status == 2)
        #expect(result.stderr.hasPrefix("error: the database has"))
        #expect(result.stderr.contains("db migrate"))
        let help = try runCLI(["help"])
        for command in ["transfer prepare", "transfer complete", "transfer status"] {
            #expect(help.stdout.contains(command))
        }
    }
}
