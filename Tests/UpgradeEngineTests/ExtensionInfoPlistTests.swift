import Foundation
import Testing

@testable import UpgradeEngine

/// The example extension's Info.plist tells iOS which passwords to generate for the strong-password change; they
/// must meet what the server checks by default, so its rules string is exactly what `upgrade-cli password rules`
/// prints without configuration (docs/ios-extension.md).
@Suite("Extension Info.plist")
struct ExtensionInfoPlistTests {
    static let plist = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()
        .deletingLastPathComponent()
        .deletingLastPathComponent()
        .appendingPathComponent("Examples/AccountModificationExtension/Info.plist")

    @Test("the password generation requirements are the server's default rules, canonical")
    func passwordRules() throws {
        let root = try PropertyListSerialization.propertyList(from: Data(contentsOf: Self.plist), format: nil)
        let extensionKeys = try #require((root as? [String: Any])?["NSExtension"] as? [String: Any])
        let attributes = try #require(extensionKeys["NSExtensionAttributes"] as? [String: Any])
        let rules = try #require(
            attributes["ASAccountAuthenticationModificationPasswordGenerationRequirements"] as? String
        )
        #expect(rules == PasswordRules.default.description)
        #expect(try PasswordRules(rules) == PasswordRules.default)
        #expect(attributes["ASAccountAuthenticationModificationSupportsStrongPasswordChange"] as? Bool == true)
        #expect(attributes["ASAccountAuthenticationModificationSupportsUpgradeToSignInWithApple"] as? Bool == true)
    }
}
