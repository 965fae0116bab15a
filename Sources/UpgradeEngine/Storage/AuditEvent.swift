/// One row of the append-only audit trail. `detail` holds non-secret facts only (reason codes, formats,
/// counts); the type offers no place for a password, code, token or nonce.
public struct AuditEvent: Sendable, Equatable {
    public var id: Int64?
    public var at: Int64
    public var accountID: String?
    public var upgradeID: String?
    public var event: String
    public var fromStatus: String?
    public var toStatus: String?
    public var detail: [String: String]

    public init(
        id: Int64? = nil,
        at: Int64,
        accountID: String?,
        upgradeID: String?,
        event: String,
        fromStatus: String? = nil,
        toStatus: String? = nil,
        detail: [String: String] = [:]
    ) {
        self.id = id
        self.at = at
        self.accountID = accountID
        self.upgradeID = upgradeID
        self.event = event
        self.fromStatus = fromStatus
        self.toStatus = toStatus
        self.detail = detail
    }
}
