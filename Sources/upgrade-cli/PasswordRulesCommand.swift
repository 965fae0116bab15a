import Foundation
import UpgradeEngine

/// `password rules [--password-rules RULES]`: the rules a changed password must meet, canonical, on
/// stdout: the string to paste into the extension's Info.plist under
/// `ASAccountAuthenticationModificationPasswordGenerationRequirements`, so that the passwords iOS
/// generates meet what `serve` checks. Reads `UPGRADE_PASSWORD_RULES` like `serve` (the flag wins),
/// or prints the default. Rules that do not parse exit 2 with one line.
struct PasswordRulesCommand: CLICommand {
    static let path = ["password", "rules"]
    static let summary = "print the password rules (UPGRADE_PASSWORD_RULES) for the extension's Info.plist"
    static let usage = "upgrade-cli password rules [--password-rules RULES]"

    static func run(_ arguments: inout ArgumentReader) throws -> Int32 {
        let flag = try arguments.option("--password-rules")
        try arguments.finish()
        let environment = ProcessInfo.processInfo.environment["UPGRADE_PASSWORD_RULES"]
        let source = flag != nil ? "--password-rules" : "UPGRADE_PASSWORD_RULES"
        guard let text = flag ?? environment, !text.trimmingCharacters(in: .whitespaces).isEmpty else {
            Console.out(PasswordRules.default.description)
            return ExitCode.success
        }
        do {
            Console.out(try PasswordRules(text).description)
        } catch {
            throw CommandFailure.configuration("\(source): \(error.message)")
        }
        return ExitCode.success
    }
}
