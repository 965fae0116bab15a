import Foundation
import UpgradeAPI
import UpgradeEngine

/// `password rules [--password-rules RULES | --password-rules-file FILE]`: the rules a changed
/// password must meet, canonical, on stdout: the string to paste into the extension's Info.plist
/// under `ASAccountAuthenticationModificationPasswordGenerationRequirements`, so that the passwords
/// iOS generates meet what `serve` checks. Reads `UPGRADE_PASSWORD_RULES` or
/// `UPGRADE_PASSWORD_RULES_FILE` exactly as `serve` does (a flag wins over its variable; the two
/// sources together are refused), or prints the default. Rules that do not parse, a file that
/// cannot be read, or both sources exit 2 with one line.
struct PasswordRulesCommand: CLICommand {
    static let path = ["password", "rules"]
    static let summary =
        "print the password rules (UPGRADE_PASSWORD_RULES or UPGRADE_PASSWORD_RULES_FILE) for the extension's Info.plist"
    static let usage = "upgrade-cli password rules [--password-rules RULES | --password-rules-file FILE]"

    static func run(_ arguments: inout ArgumentReader) throws -> Int32 {
        let flag = try arguments.option("--password-rules")
        let fileFlag = try arguments.option("--password-rules-file")
        try arguments.finish()
        let environment = ProcessInfo.processInfo.environment
        // As `serve` reads them: the flag folded in over its variable.
        var values = environment
        if let flag { values["UPGRADE_PASSWORD_RULES"] = flag }
        if let fileFlag { values["UPGRADE_PASSWORD_RULES_FILE"] = fileFlag }
        let text = ServerSettings.setting("UPGRADE_PASSWORD_RULES", in: values)
        let file = ServerSettings.setting("UPGRADE_PASSWORD_RULES_FILE", in: values)
        let source = flag != nil ? "--password-rules" : "UPGRADE_PASSWORD_RULES"
        switch (text, file) {
        case (.some, .some):
            let fileSource = fileFlag != nil ? "--password-rules-file" : "UPGRADE_PASSWORD_RULES_FILE"
            throw CommandFailure.configuration(
                "\(fileSource): give \(source) or \(fileSource), not both"
            )
        case (.some(let text), nil):
            do {
                Console.out(try PasswordRules(text).description)
            } catch {
                throw CommandFailure.configuration("\(source): \(error.message)")
            }
        case (nil, .some(let path)):
            switch ServerSettings.readPasswordRules(path: path) {
            case .success(let rules): Console.out(rules.description)
            case .failure(let problem): throw CommandFailure.configuration(problem.message)
            }
        case (nil, nil):
            Console.out(PasswordRules.default.description)
        }
        return ExitCode.success
    }
}
