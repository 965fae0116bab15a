/// Strong-password changes inside a transaction: one row per `POST /v1/password-changes` that got as
/// far as a credential check, updated by each transition. A change with TOTP lives across requests,
/// so it is stored; the new password only ever as its argon2id hash.
public protocol PasswordChangeStore {
    func insertPasswordChange(_ change: PasswordChangeRecord) throws(StorageError)
    func passwordChange(id: String) throws(StorageError) -> PasswordChangeRecord?
    /// Stores what a transition changes: status, machine, the new password's hash (cleared once the
    /// change has ended), expiry, update time. The id, account, username key, service identifier and
    /// creation time are fixed by the insert.
    func updatePasswordChange(_ change: PasswordChangeRecord, expectedVersion: Int64) throws(StorageError)
    /// The account's changes whose status is not terminal (`started`, `stepUpRequired`), oldest
    /// first, at most `limit`.
    func openPasswordChanges(accountID: String, limit: Int) throws(StorageError) -> [PasswordChangeRecord]
    /// Deletes the changes asked for `usernameKey` while no account had it (no account id), as
    /// `deleteAccountlessUpgradeSessions` does for upgrades.
    func deleteAccountlessPasswordChanges(usernameKey: String) throws(StorageError)
}

/// A row of `password_changes`. `machine` is the state machine's persisted state (JSON);
/// `newPasswordHash` is the argon2id PHC string of the new password while the change is open, nil
/// once it has ended (the completed one is the account's password then).
public struct PasswordChangeRecord: Sendable, Equatable {
    public var id: String
    public var accountID: String?
    public var usernameKey: String
    public var serviceIdentifier: String
    public var status: String
    public var machine: String
    public var newPasswordHash: String?
    public var createdAt: Int64
    public var expiresAt: Int64
    public var updatedAt: Int64
    public var version: Int64
    /// How the change was entered (`FlowEntry` raw value); nil when the client did not say, and for
    /// changes begun before migration 25. Fixed by the insert.
    public var entry: String?

    public init(
        id: String,
        accountID: String?,
        usernameKey: String,
        serviceIdentifier: String,
        status: String,
        machine: String,
        newPasswordHash: String?,
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
        self.newPasswordHash = newPasswordHash
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.updatedAt = updatedAt
        self.version = version
        self.entry = entry
    }

    static let columns =
        "id, account_id, username_key, service_identifier, status, machine, new_password_hash, created_at, expires_at, updated_at, version, entry"

    init(row: [SQLValue]) {
        self.init(
            id: row[0].string ?? "",
            accountID: row[1].string,
            usernameKey: row[2].string ?? "",
            serviceIdentifier: row[3].string ?? "",
            status: row[4].string ?? "",
            machine: row[5].string ?? "",
            newPasswordHash: row[6].string,
            createdAt: row[7].int ?? 0,
            expiresAt: row[8].int ?? 0,
            updatedAt: row[9].int ?? 0,
            version: row[10].int ?? 0,
            entry: row[11].string
        )
    }

    var insertValues: [SQLValue] {
        [
            .text(id), SQLValue(accountID), .text(usernameKey), .text(serviceIdentifier), .text(status),
            .text(machine), SQLValue(newPasswordHash), .integer(createdAt), .integer(expiresAt), .integer(updatedAt),
            .integer(version), SQLValue(entry),
        ]
    }

    var updateValues: [SQLValue] {
        [.text(status), .text(machine), SQLValue(newPasswordHash), .integer(expiresAt), .integer(updatedAt), .text(id)]
    }
}
