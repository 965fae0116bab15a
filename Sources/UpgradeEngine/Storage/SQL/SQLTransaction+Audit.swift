/// The append-only audit trail. Ids come from the table: SQLite's rowid, PostgreSQL's identity
/// sequence (docs/architecture.md §8.4).
extension SQLTransaction {
    func appendAudit(_ event: AuditEvent) throws(StorageError) {
        try appendAudit([event])
    }

    func appendAudit(_ events: [AuditEvent]) throws(StorageError) {
        try AuditSQL.insertAudit.write(events) { sql, values throws(StorageError) in try send(sql, values) }
    }

    private static func audit(_ row: [SQLValue]) -> AuditEvent {
        AuditEvent(
            id: row[0].int,
            at: row[1].int ?? 0,
            accountID: row[2].string,
            upgradeID: row[3].string,
            event: row[4].string ?? "",
            fromStatus: row[5].string,
            toStatus: row[6].string,
            detail: AuditEvent.detail(json: row[7].string ?? "{}")
        )
    }

    func auditTrail(accountID: String, limit: Int) throws(StorageError) -> [AuditEvent] {
        try rows(
            "SELECT id, at, account_id, upgrade_id, event, from_status, to_status, detail FROM audit_events WHERE account_id = $1 ORDER BY id LIMIT $2",
            [.text(accountID), .integer(Int64(limit))]
        ).map(Self.audit)
    }

    func auditTrail(upgradeID: String, limit: Int) throws(StorageError) -> [AuditEvent] {
        try rows(
            "SELECT id, at, account_id, upgrade_id, event, from_status, to_status, detail FROM audit_events WHERE upgrade_id = $1 ORDER BY id LIMIT $2",
            [.text(upgradeID), .integer(Int64(limit))]
        ).map(Self.audit)
    }

    func auditEvents(_ search: AuditSearch) throws(StorageError) -> [AuditEvent] {
        // The limit is bound too: one statement text per combination of filters, a bounded set to prepare.
        let (conditions, values) = search.whereClause()
        return try rows(
            "SELECT id, at, account_id, upgrade_id, event, from_status, to_status, detail FROM audit_events\(conditions) ORDER BY id DESC LIMIT $\(values.count + 1)",
            values + [.integer(Int64(max(search.limit, 0)))]
        ).map(Self.audit)
    }
}

/// Redaction (docs/architecture.md §7.1): the schema's trigger admits an UPDATE of a row only when
/// it replaces values that name a person with the marker.
extension SQLTransaction {
    func auditEventsNamingPersonalData(accountID: String, subs: [String]) throws(StorageError) -> [AuditEvent] {
        try rows(
            AuditSQL.selectNamingPersonalData,
            [.text(accountID), .text(JSONValue.array(subs.map(JSONValue.string)).serializedString)]
        ).map(Self.audit)
    }

    func replaceAuditDetail(id: Int64, detail: [String: String]) throws(StorageError) {
        try send(
            "UPDATE audit_events SET detail = $1 WHERE id = $2",
            [.text(AuditEvent.json(detail: detail)), .integer(id)]
        )
    }
}

enum AuditSQL {
    static let insertAudit = MultiRowInsert(
        "INSERT INTO audit_events (at, account_id, upgrade_id, event, from_status, to_status, detail)",
        columns: 7
    )
    /// The second half reads the partial expression index `audit_events_sub` (migration 17), whose
    /// predicate it repeats so that the planner picks it.
    static let selectNamingPersonalData = DialectSQL {
        """
        SELECT id, at, account_id, upgrade_id, event, from_status, to_status, detail FROM audit_events
        WHERE account_id = $1 AND \(PersonalData.mentionsKey(column: "detail"))
        UNION
        SELECT id, at, account_id, upgrade_id, event, from_status, to_status, detail FROM audit_events
        \($0 == .sqlite ? sqliteSubs : postgresSubs)
        ORDER BY id
        """
    }
    private static let sqliteSubs = """
        WHERE instr(detail, '"sub":') > 0 AND json_valid(detail)
            AND json_extract(detail, '$.sub') IN (SELECT value FROM json_each($2))
        """
    private static let postgresSubs = """
        WHERE strpos(detail, '"sub":') > 0
            AND ((detail::jsonb) ->> 'sub') = ANY (ARRAY(SELECT jsonb_array_elements_text($2::jsonb)))
        """
}
