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
