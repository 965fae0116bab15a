import Foundation
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

@Suite("upgrade-cli password rules")
struct PasswordRulesCLITests {
    @Test("prints the default, or the configured rules canonicalised; the flag wins over the variable")
    func prints() throws {
        let plain = try runCLI(["password", "rules"])
        #expect(plain.status == 0)
        #expect(plain.stdout == PasswordRules.defaultText + "\n")
        #expect(plain.stderr.isEmpty)

        let configured = try runCLI(
            ["password", "rules"],
            environment: ["UPGRADE_PASSWORD_RULES": "Required: Upper ; MINLENGTH:20;allowed:lower,[-]"]
        )
        #expect(configured.status == 0)
        #expect(configured.stdout == "minlength: 20; required: upper; allowed: lower, [-];\n")

        let flag = try runCLI(
            ["password", "rules", "--password-rules", "minlength: 16"],
            environment: ["UPGRADE_PASSWORD_RULES": "minlength: 20"]
        )
        #expect(flag.stdout == "minlength: 16;\n")
    }

    @Test("reads UPGRADE_PASSWORD_RULES_FILE or --password-rules-file as serve does; refuses both sources")
    func file() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rules-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("rules.txt").path
        try "# what the extension generates\nminlength: 24;\nrequired: digit;\n".write(
            toFile: path,
            atomically: true,
            encoding: .utf8
        )

        let variable = try runCLI(["password", "rules"], environment: ["UPGRADE_PASSWORD_RULES_FILE": path])
        #expect(variable.status == 0)
        #expect(variable.stdout == "minlength: 24; required: digit;\n")
        #expect(variable.stderr.isEmpty)
        let flag = try runCLI(["password", "rules", "--password-rules-file", path])
        #expect(flag.stdout == variable.stdout)

        let both = try runCLI(
            ["password", "rules", "--password-rules-file", path],
            environment: ["UPGRADE_PASSWORD_RULES": "minlength: 20"]
        )
        #expect(both.status == 2)
        #expect(both.stdout.isEmpty)
        #expect(
            both.stderr
                == "error: --password-rules-file: give UPGRADE_PASSWORD_RULES or --password-rules-file, not both\n"
        )

        let missing = directory.appendingPathComponent("absent.txt").path
        let unreadable = try runCLI(["password", "rules"], environment: ["UPGRADE_PASSWORD_RULES_FILE": missing])
        #expect(unreadable.status == 2)
        #expect(unreadable.stdout.isEmpty)
        #expect(unreadable.stderr == "error: UPGRADE_PASSWORD_RULES_FILE: cannot read \(missing)\n")

        try "minlength: 12; colour: red\n".write(toFile: path, atomically: true, encoding: .utf8)
        let bad = try runCLI(["password", "rules", "--password-rules-file", path])
        #expect(bad.status == 2)
        #expect(bad.stderr.hasPrefix("error: UPGRADE_PASSWORD_RULES_FILE: \(path): rule 2: unknown rule name"))
        #expect(bad.stderr.split(separator: "\n").count == 1)
    }

    @Test("bad rules: exit 2 with one line, for password rules and for serve")
    func refusals() throws {
        let bad = try runCLI(
            ["password", "rules"],
            environment: ["UPGRADE_PASSWORD_RULES": "minlength: 12; colour: red"]
        )
        #expect(bad.status == 2)
        #expect(bad.stdout.isEmpty)
        #expect(
            bad.stderr
                == "error: UPGRADE_PASSWORD_RULES: rule 2: unknown rule name; use minlength, maxlength, required, allowed or max-consecutive\n"
        )
        let flag = try runCLI(["password", "rules", "--password-rules", "required: uppercase"])
        #expect(flag.status == 2)
        #expect(flag.stderr.hasPrefix("error: --password-rules: required: unknown character class"))
        #expect(flag.stderr.split(separator: "\n").count == 1)

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rules-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = "sqlite:" + directory.appendingPathComponent("absent/db.sqlite").path
        let serve = try runCLI(
            [
                "serve", "--dev", "--listen", "127.0.0.1:0", "--db", database, "--password-rules",
                "minlength: 30; maxlength: 20",
            ]
        )
        #expect(serve.status == 2)
        #expect(serve.stderr.hasPrefix("error: UPGRADE_PASSWORD_RULES: minlength (30) is greater than maxlength (20)"))
        #expect(serve.stderr.split(separator: "\n").count == 1, "\(serve.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.path), "nothing was opened or created")
        #expect(try runCLI(["serve", "--help"]).stdout.contains("--password-rules"))
    }
}
