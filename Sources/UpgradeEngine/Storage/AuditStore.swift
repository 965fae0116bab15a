/// The audit trail inside a transaction: appended to, never changed, except that deleting an account
/// redacts the values that name a person (`PersonalData`; docs/architecture.md §7.1).
public protocol AuditStore {
    func appendAudit(_ event: AuditEvent) throws(StorageError)
    /// Appends the events in order (their ids increase in it), in a few statements.
    func appendAudit(_ events: [AuditEvent]) throws(StorageError)
    func auditTrail(accountID: String, limit: Int) throws(StorageError) -> [AuditEvent]
    func auditTrail(upgradeID: String, limit: Int) throws(StorageError) -> [AuditEvent]
    /// The events `search` selects, newest (highest id) first, at most `search.limit` of them.
    func auditEvents(_ search: AuditSearch) throws(StorageError) -> [AuditEvent]
    /// What a deletion may have to redact, in id order: the rows of `accountID` in whose detail one of
    /// `PersonalData.keys` appears, and the rows (of any account) whose detail's `sub` is one of
    /// `subs`. Found through indexes (`account_id`; the detail's `sub`), never by reading the trail.
    func auditEventsNamingPersonalData(accountID: String, subs: [String]) throws(StorageError) -> [AuditEvent]
    /// Stores `detail` as row `id`'s: the one change the trail admits, and only when it replaces
    /// values of `PersonalData.keys` with `PersonalData.redactedMarker` and changes nothing else; the
    /// schema refuses any other (`.constraint`), as it refuses every other UPDATE and every DELETE.
    func replaceAuditDetail(id: Int64, detail: [String: String]) throws(StorageError)
}

extension AuditStore {
    /// Redacts what names the account being deleted: in its own rows every value of
    /// `PersonalData.keys`, in other rows the values equal to one of its Apple ids `subs`. The ids,
    /// times, events and statuses stay. Returns how many rows changed.
    @discardableResult
    public func redactAudit(accountID: String, subs: [String]) throws(StorageError) -> Int {
        let values = Set(subs)
        var changed = 0
        for event in try auditEventsNamingPersonalData(accountID: accountID, subs: subs) {
            guard let id = event.id else { continue }
            let redacted = PersonalData.redact(event.detail, everyValue: event.accountID == accountID, values: values)
            guard redacted != event.detail else { continue }
            try replaceAuditDetail(id: id, detail: redacted)
            changed += 1
        }
        return changed
    }
}

extension AuditSearch {
    /// The WHERE clause and its values, parameters `$1` onwards.
    func whereClause() -> (sql: String, values: [SQLValue]) {
        var conditions: [String] = []
        var values: [SQLValue] = []
        func add(_ column: String, _ operation: String, _ value: SQLValue) {
            values.append(value)
            conditions.append("\(column) \(operation) $\(values.count)")
        }
        if let accountID { add("account_id", "=", .text(accountID)) }
        if let event { add("event", "=", .text(event)) }
        if let since { add("at", ">=", .integer(since)) }
        if let until { add("at", "<", .integer(until)) }
        if let beforeID { add("id", "<", .integer(beforeID)) }
        return (conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND "), values)
    }
}
