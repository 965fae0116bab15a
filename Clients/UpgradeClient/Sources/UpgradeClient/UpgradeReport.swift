/// `GET /v1/upgrades/{id}`: where an upgrade stands (the API's `UpgradeView`). Statuses and problems
/// are the server's strings (`started`, `stepUpRequired`, `awaitingAppleCredential`, `converting`,
/// `completed`, `failed`, `cancelled`, `expired`; `problem` a slug such as `conversion-interrupted`),
/// kept as strings so that a status added later still reads.
public struct UpgradeReport: Sendable, Equatable {
    public var upgradeID: String
    public var status: String
    /// How a failed or expired upgrade ended.
    public var problem: String?

    public init(upgradeID: String, status: String, problem: String? = nil) {
        self.upgradeID = upgradeID
        self.status = status
        self.problem = problem
    }

    /// The account was converted: its password no longer works.
    public var isCompleted: Bool { status == "completed" }
}
