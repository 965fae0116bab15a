import Foundation
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// Every command reads a setting as `serve` reads it (README, Command line): the key file wins over
/// `--dev`, `--dev` means `serve --dev`'s database, blanks around `UPGRADE_DB` are dropped, the key id
/// may come from `APPLE_KEY_ID_FILE`, the team and client an import links under are checked, and only
/// `db migrate` creates a database. Each case once went wrong silently (exit 0, wrong result).
@Suite("upgrade-cli reads its settings as serve does")
struct CLISettingsTests {
    final class Directory {
        let url: URL
        init() throws {
            url = FileManager.default.temporaryDirectory.appendingPathComponent("cli-settings-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        }
        func path(_ name: String) -> String { url.appendingPathComponent(name).path }
        func exists(_ name: String) -> Bool { FileManager.default.fileExists(atPath: path(name)) }
        deinit { try? FileManager.default.removeItem(at: url) }
    }

    static func privateFile(_ path: String, _ data: Data) throws {
        try data.write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
    }

    static func lines(_ text: String) -> Int { text.split(separator: "\n").count }

    @Test("--dev with UPGRADE_SECRET_KEY_FILE set seals under the key file, as serve --dev does")
    func keyFileWinsOverDev() throws {
        let dir = try Directory()
        let db = "sqlite:" + dir.path("real.db")
        #expect(try runCLI(["db", "migrate", "--db", db]).status == 0)
        try Self.privateFile(dir.path("key"), Data(SecureRandom.bytes(32)))
        try Self.privateFile(dir.path("parameters.json"), Data(KeyedHashFixtures.parametersFile(2, 4).utf8))
        let environment = ["UPGRADE_SECRET_KEY_FILE": dir.path("key")]

        let added = try runCLI(
            ["hash-parameters", "add", dir.path("parameters.json"), "--dev", "--db", db],
            environment: environment
        )
        #expect(added.status == 0, "\(added.stderr)")
        // Sealed under the published development key, the sets would not open with the key file.
        let listed = try runCLI(["hash-parameters", "list", "--db", db], environment: environment)
        #expect(listed.status == 0, "\(listed.stdout)\(listed.stderr)")
        #expect(!listed.stdout.contains("does not open"), "\(listed.stdout)")
    }

    @Test("--dev means serve --dev's database; other commands use upgrade.db; only db migrate creates one")
    func developmentDatabase() throws {
        let dir = try Directory()
        #expect(try runCLI(["db", "migrate", "--db", "sqlite:siwa-dev.db"], directory: dir.url).status == 0)
        #expect(dir.exists("siwa-dev.db"))

        let added = try runCLI(["accounts", "add", "bob", "--dev"], stdin: "bob-password-1", directory: dir.url)
        #expect(added.status == 0, "\(added.stderr)")
        #expect(!dir.exists("upgrade.db"))
        let shown = try runCLI(["accounts", "show", "bob", "--db", "sqlite:siwa-dev.db"], directory: dir.url)
        #expect(shown.status == 0, "\(shown.stderr)")

        // No --dev: the production default, which does not exist here and is not created.
        for arguments in [["accounts", "show", "bob"], ["db", "status"], ["audit"], ["report"], ["db", "check"]] {
            let missing = try runCLI(arguments, directory: dir.url)
            #expect(missing.status == 2, "\(arguments)")
            #expect(
                missing.stderr
                    == "error: no database at sqlite:upgrade.db (from --db, UPGRADE_DB or the default); 'upgrade-cli db migrate --db sqlite:upgrade.db' creates it\n",
                "\(arguments): \(missing.stderr)"
            )
            #expect(!dir.exists("upgrade.db"), "\(arguments) left a file")
        }
    }

    @Test("a command given --dev without the development database names the command that creates that one")
    func developmentDatabaseHint() throws {
        let dir = try Directory()
        let missing = try runCLI(["db", "check", "--dev"], directory: dir.url)
        #expect(missing.status == 2)
        #expect(
            missing.stderr
                == "error: no database at sqlite:siwa-dev.db (from --db, UPGRADE_DB or the default); 'upgrade-cli db migrate --db sqlite:siwa-dev.db' creates it\n",
            "\(missing.stderr)"
        )
        // `db migrate --dev` creates the same one; the command then finds it.
        let migrated = try runCLI(["db", "migrate", "--dev"], directory: dir.url)
        #expect(migrated.status == 0, "\(migrated.stderr)")
        #expect(dir.exists("siwa-dev.db") && !dir.exists("upgrade.db"))
        let added = try runCLI(["accounts", "add", "bob", "--dev"], stdin: "bob-password-1", directory: dir.url)
        #expect(added.status == 0, "\(added.stderr)")
    }

    @Test("serve --dev with the emulator's port taken is a configuration problem naming the setting, exit 2")
    func emulatorPortTaken() throws {
        let dir = try Directory()
        let taken = try LoopbackListener(backlog: 1)
        let port = Int(taken.port)
        // Held open to the end of the test, not just to its last use.
        defer { withExtendedLifetime(taken) {} }
        let served = try runCLI(
            ["serve", "--dev", "--emulator-port", "\(port)", "--listen", "127.0.0.1:0"],
            directory: dir.url
        )
        #expect(served.status == 2, "\(served.stderr)")
        #expect(
            served.stderr.contains(
                "error: UPGRADE_DEV_EMULATOR_PORT: cannot run the Apple emulator on port \(port): address in use"
            ),
            "\(served.stderr)"
        )
        #expect(served.stderr.contains("--emulator-port 0 picks a free one"))
    }

    /// What `serve` outside `--dev` needs, in `dir`: the team's key and the keyring (both mode
    /// 0600), and the SQLite file `database` there (not created).
    static func productionEnvironment(_ dir: Directory, database: String) throws -> [String: String] {
        try writeOwnerOnly(P256PrivateKey().pemRepresentation, to: dir.path("AuthKey.p8"))
        try privateFile(dir.path("key"), Data(SecureRandom.bytes(32)))
        return [
            "APPLE_TEAM_ID": "TEAMA12345", "APPLE_KEY_ID": "KEY1234567",
            "APPLE_PRIVATE_KEY_FILE": dir.path("AuthKey.p8"),
            "APPLE_CLIENT_IDS": "com.example.app", "UPGRADE_SECRET_KEY_FILE": dir.path("key"),
            "UPGRADE_DB": "sqlite:" + dir.path(database), "UPGRADE_LISTEN": "127.0.0.1:0",
        ]
    }

    @Test("serve outside --dev refuses a database file that does not exist, and creates none")
    func serveNeedsDatabase() throws {
        let dir = try Directory()
        let environment = try Self.productionEnvironment(dir, database: "typo.db")
        let served = try runCLI(["serve"], environment: environment)
        #expect(served.status == 2)
        #expect(
            served.stderr
                == "error: UPGRADE_DB: no database at sqlite:\(dir.path("typo.db")); 'upgrade-cli db migrate' creates one\n",
            "\(served.stderr)"
        )
        #expect(!dir.exists("typo.db"))
    }

    @Test("serve refuses a team key (.p8) that group or others may read, in one line, and reads nothing else")
    func openPrivateKey() throws {
        let dir = try Directory()
        let environment = try Self.productionEnvironment(dir, database: "u.db")
        chmod(dir.path("AuthKey.p8"), 0o640)
        #expect(try runCLI(["db", "migrate"], environment: ["UPGRADE_DB": "sqlite:" + dir.path("u.db")]).status == 0)
        let served = try runCLI(["serve"], environment: environment)
        #expect(served.status == 2)
        #expect(
            served.stderr
                == "error: APPLE_PRIVATE_KEY_FILE=\(dir.path("AuthKey.p8")): has mode 0640; group and others must have no access: run chmod 600 on it\n",
            "\(served.stderr)"
        )
        #expect(!served.stderr.contains("PRIVATE KEY"), "the key's text is never quoted")
    }

    @Test("UPGRADE_DB with blanks around it names the same file for db migrate as for serve")
    func blanksAroundDatabase() throws {
        let dir = try Directory()
        let migrated = try runCLI(["db", "migrate"], environment: ["UPGRADE_DB": "  sqlite:\(dir.path("t.db")) "])
        #expect(migrated.status == 0, "\(migrated.stderr)")
        #expect(dir.exists("t.db"))
        #expect(!dir.exists("t.db "))
        let status = try runCLI(["db", "status"], environment: ["UPGRADE_DB": "sqlite:\(dir.path("t.db"))\t"])
        #expect(status.status == 0, "a tab is a blank serve drops too: \(status.stderr)")
        #expect(
            try runCLI(["db", "status"], environment: ["UPGRADE_DB": " "], directory: dir.url).stderr.contains(
                "sqlite:upgrade.db"
            )
        )
    }

    @Test("a missing key file or a database without schema is one line without usage text")
    func configurationProblemsAreOneLine() throws {
        let dir = try Directory()
        let db = "sqlite:" + dir.path("cli.db")
        #expect(try runCLI(["db", "migrate", "--db", db]).status == 0)
        let uri = "otpauth://totp/Example:alice?secret=JBSWY3DPEHPK3PXPJBSWY3DP&issuer=Example"
        let noKey = try runCLI(
            ["accounts", "add", "alice", "--totp-uri", uri, "--db", db],
            stdin: "alice-password-1",
            environment: ["UPGRADE_SECRET_KEY_FILE": dir.path("absent")]
        )
        #expect(noKey.status == 2)
        #expect(noKey.stderr.hasPrefix("error: UPGRADE_SECRET_KEY_FILE="), "\(noKey.stderr)")
        #expect(Self.lines(noKey.stderr) == 1, "\(noKey.stderr)")
        #expect(try runCLI(["accounts", "show", "alice", "--db", db]).status == 1, "nothing written")

        #expect(FileManager.default.createFile(atPath: dir.path("empty.db"), contents: nil))
        let unmigrated = try runCLI(["db", "check", "--db", "sqlite:" + dir.path("empty.db")])
        #expect(unmigrated.status == 2)
        #expect(unmigrated.stderr == "error: the database has no schema yet; run 'upgrade-cli db migrate' first\n")
    }

    @Test("accounts import checks the team and client of appleSub rows as serve does; a refusal writes nothing")
    func importLinkOwner() throws {
        let dir = try Directory()
        let db = "sqlite:" + dir.path("cli.db")
        #expect(try runCLI(["db", "migrate", "--db", db]).status == 0)
        let file = dir.path("users.jsonl")
        try #"{"username":"carol","appleSub":"001234.abcdef0123456789abcdef0123456789.0123"}"#.write(
            toFile: file,
            atomically: true,
            encoding: .utf8
        )
        let clients = ["APPLE_CLIENT_IDS": "com.example.app, com.example.web"]
        let refusals: [([String], [String: String], String)] = [
            (["--team-id", "not a team!"], clients, "error: --team-id must be 10 characters A-Z or 0-9"),
            (
                ["--team-id", "TEAMA12345", "--client-id", "com.other.app"], clients,
                "error: --client-id com.other.app is not in APPLE_CLIENT_IDS (com.example.app,com.example.web)"
            ),
            (
                ["--team-id", "TEAMA12345", "--client-id", "com.other app"], [:],
                "error: --client-id must be a bundle id"
            ),
            (
                [], ["APPLE_TEAM_ID": "team-a", "APPLE_CLIENT_IDS": "com.example.app"],
                "error: APPLE_TEAM_ID must be 10 characters"
            ),
        ]
        for (options, environment, message) in refusals {
            let refused = try runCLI(["accounts", "import", file, "--db", db] + options, environment: environment)
            #expect(refused.status == 2, "\(options)")
            #expect(refused.stderr.hasPrefix(message), "\(options): \(refused.stderr)")
        }
        #expect(try runCLI(["accounts", "show", "carol", "--db", db]).status == 1, "nothing written")
        // Neither given: the row is refused naming the options and the variables that exist.
        let unowned = try runCLI(["accounts", "import", file, "--db", db])
        #expect(unowned.status == 1, "\(unowned.stdout)\(unowned.stderr)")
        #expect(
            (unowned.stdout + unowned.stderr).contains(
                "give --team-id and --client-id, or set APPLE_TEAM_ID and APPLE_CLIENT_IDS"
            ),
            "\(unowned.stdout)\(unowned.stderr)"
        )

        let imported = try runCLI(
            ["accounts", "import", file, "--db", db, "--client-id", "com.example.web"],
            environment: clients.merging(["APPLE_TEAM_ID": " TEAMA12345 "]) { $1 }
        )
        #expect(imported.status == 0, "\(imported.stdout)\(imported.stderr)")
        let shown = try runCLI(["accounts", "show", "carol", "--db", db])
        #expect(shown.stdout.contains("team TEAMA12345, client com.example.web"), "\(shown.stdout)")
    }

    @Test("accounts delete takes the key id from APPLE_KEY_ID_FILE, as serve does, and refuses both sources")
    func keyIDFile() throws {
        let dir = try Directory()
        let db = "sqlite:" + dir.path("cli.db")
        #expect(try runCLI(["db", "migrate", "--db", db]).status == 0)
        for name in ["alice", "bob"] {
            #expect(try runCLI(["accounts", "add", name, "--db", db], stdin: "\(name)-password-1").status == 0)
        }
        try writeOwnerOnly(P256PrivateKey().pemRepresentation, to: dir.path("AuthKey.p8"))
        try "KEY1234567\n".write(toFile: dir.path("key-id"), atomically: true, encoding: .utf8)
        let apple = [
            "APPLE_TEAM_ID": "TEAMA12345", "APPLE_KEY_ID_FILE": dir.path("key-id"),
            "APPLE_PRIVATE_KEY_FILE": dir.path("AuthKey.p8"), "APPLE_CLIENT_IDS": "com.example.app",
            "APPLE_BASE_URL": "http://127.0.0.1:9",
        ]

        let both = try runCLI(
            ["accounts", "delete", "alice", "--yes", "--dev", "--db", db],
            environment: apple.merging(["APPLE_KEY_ID": "KEY1234567"]) { $1 }
        )
        #expect(both.status == 2)
        #expect(both.stderr == "error: APPLE_KEY_ID_FILE: give APPLE_KEY_ID or APPLE_KEY_ID_FILE, not both\n")
        #expect(try runCLI(["accounts", "show", "alice", "--db", db]).status == 0, "not deleted")

        let deleted = try runCLI(["accounts", "delete", "alice", "--yes", "--dev", "--db", db], environment: apple)
        #expect(deleted.status == 0, "\(deleted.stderr)")
        #expect(deleted.stdout.contains("appleRevocation: none"), "\(deleted.stdout)")

        try "not-an-id\n".write(toFile: dir.path("key-id"), atomically: true, encoding: .utf8)
        let bad = try runCLI(["accounts", "delete", "bob", "--yes", "--dev", "--db", db], environment: apple)
        #expect(bad.status == 2)
        #expect(bad.stderr.hasPrefix("error: APPLE_KEY_ID_FILE: \(dir.path("key-id")) must hold the key id alone"))
        #expect(try runCLI(["accounts", "show", "bob", "--db", db]).status == 0, "not deleted")
    }
}
