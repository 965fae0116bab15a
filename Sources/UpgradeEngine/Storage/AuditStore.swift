/// The audit trail inside a transaction: appended to, never changed.
public protocol AuditStore {
    func appendAudit(_ event: AuditEvent) throws(StorageError)
    func auditTrail(accountID: String, limit: Int) throws(StorageError) -> [AuditEvent]
    func auditTrail(upgradeID: String, limit: Int) throws(StorageError) -> [AuditEvent]
}
