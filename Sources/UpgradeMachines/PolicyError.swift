/// A policy value outside the range the machines can work with. Raised when the policy is built,
/// so a bad configuration stops start-up instead of surfacing as odd behaviour later.
public struct PolicyError: Error, Sendable, Hashable, CustomStringConvertible {
    /// `Type.property`, e.g. `UpgradePolicy.maxStepUpAttempts`.
    public let setting: String
    public let value: Int64
    /// What the value must satisfy, phrased to complete "it must be ...".
    public let requirement: String

    public init(setting: String, value: Int64, requirement: String) {
        self.setting = setting
        self.value = value
        self.requirement = requirement
    }

    public var description: String { "\(setting) is \(value); it must be \(requirement)" }

    static func requirePositive(_ value: Int64, _ setting: String) throws(PolicyError) {
        guard value > 0 else { throw PolicyError(setting: setting, value: value, requirement: "at least 1") }
    }
}
