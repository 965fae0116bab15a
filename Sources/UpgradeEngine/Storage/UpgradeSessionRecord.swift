/// One upgrade attempt as stored. `machine` is the state machine's persisted state (JSON);
/// `stateHash` and `nonceHash` are SHA-256 digests of the values handed to the client, never the values.
public struct UpgradeSessionRecord: Sendable, Equatable {
    public var id: String
    public var accountID: String?
    public var usernameKey: String
    public var serviceIdentifier: String
    public var status: String
    public var machine: String
    public var stateHash: String?
    public var nonceHash: String?
    public var linkedSub: String?
    public var createdAt: Int64
    public var expiresAt: Int64
    public var updatedAt: Int64
    public var version: Int64
    /// How the upgrade was entered (`FlowEntry` raw value); nil when the client did not say, and for
    /// upgrades begun before migration 25. Fixed by the insert.
    public var entry: String?

    public init(
        id: String,
        accountID: String?,
        usernameKey: String,
        serviceIdentifier: String,
        status: String,
        machine: String,
        stateHash: String?,
        nonceHash: String?,
        linkedSub: String?,
        createdAt: Int64,
        expiresAt: Int64,
        updatedAt: Int64,
        version: Int64 = 1,
        entry: String? = nil
    ) {
        self.id = id
        self.accountID = accountID
        self.usernameKey = usernameKey
        self.serviceIdentifier = serviceIdentifier
        self.status = status
        self.machine = machine
        self.stateHash = stateHash
        self.nonceHash = nonceHash
        self.linkedSub = linkedSub
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.updatedAt = updatedAt
        self.version = version
        self.entry = entry
    }
}
