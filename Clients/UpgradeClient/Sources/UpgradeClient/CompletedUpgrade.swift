/// A converted account: its password is gone and it signs in with Apple from now on.
public struct CompletedUpgrade: Sendable, Equatable {
    public var upgradeID: String
    public var accountID: String

    public init(upgradeID: String, accountID: String) {
        self.upgradeID = upgradeID
        self.accountID = accountID
    }
}
