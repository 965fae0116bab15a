/// The audit trail inside a transaction: appended to, never changed.
public protocol AuditStore {
    func appendAudit(_ event: AuditEvent) throws(StorageError)
    /// Appends the events in order (their ids increase in it), in a few statements.
    func appendAudit(_ events: [AuditEvent]) throws(StorageError)
    func auditTrail(accountID: String, limit: Int) throws(StorageError) -> [AuditEvent]
    func auditTrail(upgradeID: String, limit: Int) throws(StorageError) -> [AuditEvent]
    /// The events `search` selects, newest (highest id) first, at most `search.limit` of them.
    func auditEvents(_ search: AuditSearch) throws(StorageError) -> [AuditEvent]
}

extension AuditSearch {
    /// The WHERE clause and its values, shared by the backends: `placeholder` spells the n-th
    /// parameter (1-based) in the backend's dialect.
    func whereClause(_ placeholder: (Int) -> String) -> (sql: String, values: [SQLValue]) {
        var conditions: [String] = []
        var values: [SQLValue] = []
        func add(_ column: String, _ operation: String, _ value: SQLValue) {
            values.append(value)
            conditions.append("\(column) \(operation) \(placeholder(values.count))")
        }
        if let accountID { add("account_id", "=", .text(accountID)) }
        if let event { add("event", "=", .text(event)) }
        if let since { add("at", ">=", .integer(since)) }
        if let until { add("at", "<", .integer(until)) }
        if let beforeID { add("id", "<", .integer(beforeID)) }
        return (conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND "), values)
    }
}
