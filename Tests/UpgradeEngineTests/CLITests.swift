import Foundation
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

@Suite("upgrade-cli commands")
struct CLITests {
    struct PasswordFixture: Decodable {
        let format: String
        let password: String
        let hash: String
    }

    @Test("password verify: 0 on a match, 1 on a mismatch, 2 for an unknown or out-of-bounds hash")
    func passwordVerify() throws {
        struct File: Decodable { let fixtures: [PasswordFixture] }
        let fixtures = try JSONDecoder().decode(File.self, from: Fixtures.data("passwords/hashes.json")).fixtures
        let byFormat = Dictionary(fixtures.map { ($0.format, $0) }) { first, _ in first }
        #expect(byFormat.count >= 8, "one fixture per format family")
        for fixture in byFormat.values {
            #expect(
                try runCLI(["password", "verify", "--hash", fixture.hash], stdin: fixture.password).status == 0,
                "\(fixture.format)"
            )
            #expect(
                try runCLI(["password", "verify", "--hash", fixture.hash], stdin: fixture.password + "x").status == 1,
                "\(fixture.format)"
            )
        }
        let outOfBounds = try runCLI(
            ["password", "verify", "--hash", "$2b$31$abcdefghijklmnopqrstuu5s2v8.iXieOjg/.AySBTTZIIVFJeBui"],
            stdin: "pw"
        )
        #expect(outOfBounds.status == 2)
        #expect(outOfBounds.stderr.contains("cost = 31"))
        #expect(try runCLI(["password", "verify", "--hash", "{SSHA}abcdef"], stdin: "pw").status == 2)
        let phpass = try runCLI(
            ["password", "verify", "--hash", "$P$Ssaltsalt" + String(repeating: ".", count: 22)],
            stdin: "pw"
        )
        #expect(phpass.status == 2)
        #expect(phpass.stderr.contains("PasswordHashLimits.phpassCost"))
        #expect(try runCLI(["password", "verify"], stdin: "pw").status == 2)
    }

    @Test("db migrate, accounts add and show: clear errors, nothing created by bad input, no secret printed")
    func accounts() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let db = "sqlite:" + directory.appendingPathComponent("cli.db").path

        let bad = try runCLI(["db", "status", "--db", db, "--bogus"])
        #expect(bad.status == 2)
        #expect(bad.stderr.hasPrefix("error: unknown option --bogus"))
        #expect(
            !FileManager.default.fileExists(atPath: directory.appendingPathComponent("cli.db").path),
            "bad input creates nothing"
        )

        let early = try runCLI(["accounts", "show", "alice", "--db", db])
        #expect(early.status == 2)
        #expect(early.stderr.contains("db migrate"))

        #expect(try runCLI(["db", "migrate", "--db", db]).stdout.contains("applied 0001 initial"))
        let secret = "JBSWY3DPEHPK3PXPJBSWY3DP"
        let uri = "otpauth://totp/Example:alice?secret=\(secret)&issuer=Example"
        let noKey = try runCLI(["accounts", "add", "alice", "--totp-uri", uri, "--db", db], stdin: "s3cret-pass")
        #expect(noKey.status == 2)
        #expect(noKey.stderr.contains("UPGRADE_SECRET_KEY_FILE"))

        let keyFile = directory.appendingPathComponent("key")
        try Data(SecureRandom.bytes(32)).write(to: keyFile)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyFile.path)
        let added = try runCLI(
            ["accounts", "add", "alice", "--totp-uri", uri, "--recovery-codes", "2", "--db", db],
            stdin: "s3cret-pass\n",
            environment: ["UPGRADE_SECRET_KEY_FILE": keyFile.path]
        )
        #expect(added.status == 0, "\(added.stderr)")
        #expect(try runCLI(["accounts", "add", "ALICE", "--db", db], stdin: "x").status == 1, "duplicate username")

        let shown = try runCLI(["accounts", "show", "alice", "--db", db])
        #expect(shown.status == 0)
        #expect(shown.stdout.contains("credential   password"))
        #expect(shown.stdout.contains("totp         enrolled (SHA1, 6 digits)"))
        #expect(shown.stdout.contains("recovery     2 unused code(s)"))
        #expect(shown.stdout.contains("account.created"))
        for leaked in ["s3cret-pass", secret, "$argon2id$"] {
            #expect(!shown.stdout.contains(leaked) && !added.stdout.contains(leaked) && !added.stderr.contains(leaked))
        }
        #expect(try runCLI(["accounts", "show", "nobody", "--db", db]).status == 1)
    }

    @Test("--help, -h and help print usage on stdout and exit 0, for the tool, a command group and each command")
    func help() throws {
        for arguments in [["--help"], ["-h"], ["help"]] {
            let result = try runCLI(arguments)
            #expect(result.status == 0 && result.stderr.isEmpty, "\(arguments): \(result.stderr)")
            #expect(result.stdout.hasPrefix("usage: upgrade-cli COMMAND"), "\(arguments)")
            #expect(result.stdout.contains("transfer prepare") && result.stdout.contains("exit codes"), "\(arguments)")
        }
        let commands = [
            ["transfer", "prepare"], ["db", "migrate"], ["accounts", "add"], ["serve"], ["token", "verify"],
            ["emulator", "serve"],
        ]
        for command in commands {
            let spelled = command.joined(separator: " ")
            for arguments in [command + ["--help"], command + ["-h"], ["help"] + command, ["--help"] + command] {
                let result = try runCLI(arguments, environment: ["UPGRADE_DB": "postgres://unused"])
                #expect(result.status == 0 && result.stderr.isEmpty, "\(arguments): \(result.stderr)")
                #expect(result.stdout.hasPrefix("usage: upgrade-cli \(spelled)"), "\(arguments): \(result.stdout)")
            }
        }
        // A group lists its commands.
        for arguments in [["transfer", "--help"], ["help", "transfer"], ["db", "-h"]] {
            let result = try runCLI(arguments)
            #expect(result.status == 0 && result.stderr.isEmpty, "\(arguments): \(result.stderr)")
            #expect(result.stdout.hasPrefix("usage: upgrade-cli \(arguments.contains("db") ? "db" : "transfer") "))
        }
        let transfer = try runCLI(["transfer", "--help"])
        for command in ["transfer prepare", "transfer complete", "transfer status"] {
            #expect(transfer.stdout.contains(command))
        }
        // Help for something that does not exist is still an error.
        for arguments in [["help", "bogus"], ["--help", "transfer", "bogus"], ["bogus", "--help"]] {
            let result = try runCLI(arguments)
            #expect(result.status == 2 && result.stdout.isEmpty, "\(arguments)")
            #expect(result.stderr.hasPrefix("error: unknown command"), "\(arguments): \(result.stderr)")
        }
    }

    @Test("admin tokens add, list, remove: the token printed once, the file 0600 and hashed, one-line refusals, exit 2")
    func adminTokens() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("admin-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("admin-tokens").path

        let added = try runCLI(["admin", "tokens", "add", "backend", "--scopes", "tickets,accounts", "--file", file])
        #expect(added.status == 0, "\(added.stderr)")
        let lines = added.stdout.split(separator: "\n")
        #expect(lines.count == 1)
        let token = String(lines.first ?? "")
        #expect(token.hasPrefix("siwa_admin_") && token.utf8.count >= 11 + 22, "at least 128 random bits")
        #expect(!added.stderr.contains(token))
        let mode = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let stored = try String(contentsOfFile: file, encoding: .utf8)
        #expect(!stored.contains(token), "only a hash is stored")
        #expect(stored.contains(Digest.sha256(token).hexString))

        // The variable names the file as well as --file does.
        let second = try runCLI(
            ["admin", "tokens", "add", "support", "--scopes", "audit"],
            environment: ["UPGRADE_ADMIN_TOKENS_FILE": file]
        )
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stdout != added.stdout)

        let list = try runCLI(["admin", "tokens", "list", "--file", file])
        #expect(list.status == 0)
        let listed = list.stdout.split(separator: "\n").map {
            $0.split(separator: "\t").prefix(2).joined(separator: " ")
        }
        #expect(listed == ["backend tickets,accounts", "support audit"], "\(list.stdout)")
        #expect(!list.stdout.contains(Digest.sha256(token).hexString) && !list.stdout.contains(token))

        // Each refusal: one line on stderr, exit 2, the file unchanged.
        let refusals: [[String]] = [
            ["admin", "tokens", "add", "backend", "--scopes", "tickets", "--file", file],
            ["admin", "tokens", "add", "bad name", "--scopes", "tickets", "--file", file],
            ["admin", "tokens", "add", "-x", "--scopes", "tickets", "--file", file],
            ["admin", "tokens", "add", "other", "--scopes", "tickets,everything", "--file", file],
            ["admin", "tokens", "add", "other", "--scopes", "tickets,tickets", "--file", file],
            ["admin", "tokens", "add", "other", "--scopes", "", "--file", file],
            ["admin", "tokens", "remove", "nobody", "--file", file],
            ["admin", "tokens", "list", "--file", directory.appendingPathComponent("absent").path],
        ]
        let before = try String(contentsOfFile: file, encoding: .utf8)
        for arguments in refusals {
            let refused = try runCLI(arguments)
            #expect(refused.status == 2, "\(arguments)")
            #expect(
                refused.stderr.hasPrefix("error: ") && refused.stderr.split(separator: "\n").count == 1,
                "\(arguments): \(refused.stderr)"
            )
            #expect(refused.stdout.isEmpty, "\(arguments)")
        }
        #expect(try String(contentsOfFile: file, encoding: .utf8) == before, "refusals changed nothing")

        let removed = try runCLI(["admin", "tokens", "remove", "support", "--file", file])
        #expect(removed.status == 0, "\(removed.stderr)")
        #expect(try runCLI(["admin", "tokens", "list", "--file", file]).stdout.hasPrefix("backend\t"))
        #expect(!(try runCLI(["admin", "tokens", "list", "--file", file]).stdout.contains("support")))

        // A file group or others can read is refused by every command and by serve.
        chmod(file, 0o644)
        for arguments in [
            ["admin", "tokens", "list", "--file", file],
            ["admin", "tokens", "add", "third", "--scopes", "audit", "--file", file],
        ] {
            let refused = try runCLI(arguments)
            #expect(refused.status == 2, "\(arguments)")
            #expect(
                refused.stderr.contains("has mode 0644") && refused.stderr.contains("chmod 600"),
                "\(refused.stderr)"
            )
        }
        let database = "sqlite:" + directory.appendingPathComponent("absent/db.sqlite").path
        let serve = try runCLI(
            ["serve", "--dev", "--listen", "127.0.0.1:0", "--db", database, "--admin-tokens-file", file]
        )
        #expect(serve.status == 2)
        #expect(
            serve.stderr
                == "error: UPGRADE_ADMIN_TOKENS_FILE=\(file) has mode 0644; group and others must have no access: run chmod 600 on it\n",
            "\(serve.stderr)"
        )
        let variable = try runCLI(
            ["serve", "--dev", "--listen", "127.0.0.1:0", "--db", database],
            environment: ["UPGRADE_ADMIN_TOKENS_FILE": directory.appendingPathComponent("absent").path]
        )
        #expect(variable.status == 2)
        #expect(variable.stderr.hasPrefix("error: UPGRADE_ADMIN_TOKENS_FILE="), "\(variable.stderr)")
        #expect(variable.stderr.split(separator: "\n").count == 1)
        #expect(try runCLI(["serve", "--help"]).stdout.contains("--admin-tokens-file"))
    }

    @Test(
        "an unreachable PostgreSQL is one line naming the host and the cause, exit 2, for every command that opens a database"
    )
    func unreachablePostgresInOneLine() throws {
        let url = "postgres://upgrade:secretpw@127.0.0.1:1/upgrade"
        let commands = [
            ["db", "migrate"], ["db", "status"], ["accounts", "add", "bob"], ["accounts", "show", "bob"],
            ["transfer", "status"], ["serve", "--dev", "--listen", "127.0.0.1:0"], ["demo", "--db", url],
        ]
        for command in commands {
            let result = try runCLI(command, stdin: "a password", environment: ["UPGRADE_DB": url])
            #expect(result.status == 2, "\(command)")
            let lines = result.stderr.split(separator: "\n")
            #expect(lines.count == 1, "\(command): \(result.stderr)")
            #expect(
                result.stderr.contains("cannot connect to PostgreSQL at 127.0.0.1:1: Connection refused"),
                "\(command): \(result.stderr)"
            )
            #expect(!result.stderr.contains("secretpw") && !result.stdout.contains("secretpw"), "\(command)")
        }
        // Given as --db, it is opened the same way.
        let flag = try runCLI(["db", "status", "--db", url])
        #expect(
            flag.status == 2 && flag.stderr.contains("cannot connect to PostgreSQL at 127.0.0.1:1"),
            "\(flag.stderr)"
        )
    }

    @Test("demo: the whole upgrade over HTTP succeeds and the old password is refused")
    func demo() throws {
        let result = try runCLI(["demo"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("status completed, result success"))
        #expect(result.stdout.contains("problem invalid-credentials"))
        #expect(!result.stdout.contains("demo-password"), "the demo prints no password")
    }
}
