/// The extension's vocabulary for the outcome of evaluating an existing credential
/// (`ASAccountAuthenticationModificationController`'s flow): every upgrade answer carries one.
public enum UpgradeResult: String, Sendable, Hashable, CaseIterable, Codable {
    case success
    case failure
    case twoFactorAuthRequired
}
