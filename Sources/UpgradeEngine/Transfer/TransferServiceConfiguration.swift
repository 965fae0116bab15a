/// What the transfer service needs besides its collaborators.
public struct TransferServiceConfiguration: Sendable {
    /// The team whose credentials this deployment holds (`APPLE_TEAM_ID`): the sender team while
    /// preparing, the recipient team once the app was transferred. Links re-keyed by a transfer are
    /// recorded under it.
    public var teamID: String

    public init(teamID: String) {
        self.teamID = teamID
    }
}
