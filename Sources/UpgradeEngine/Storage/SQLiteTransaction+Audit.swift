/// The append-only audit trail.
extension SQLiteTransaction: AuditStore {
    func appendAudit(_ event: AuditEvent) throws(StorageError) {
        let detail = JWSJSON.object(
            event.detail.sorted { $0.key < $1.key }.map { JWSJSON.Member($0.key, .string($0.value)) }
        )
        .serializedString
        try rows(
            "INSERT INTO audit_events (at, account_id, upgrade_id, event, from_status, to_status, detail) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                .integer(event.at), SQLValue(event.accountID), SQLValue(event.upgradeID), .text(event.event),
                SQLValue(event.fromStatus), SQLValue(event.toStatus), .text(detail),
            ]
        )
    }

    private static func audit(_ row: [SQLValue]) -> AuditEvent {
        let detailText = row[7].string ?? "{}"
        var detail: [String: String] = [:]
        for member in (try? JWSJSON.parse(Array(detailText.utf8)))?.members ?? [] {
            if let value = member.value.stringValue { detail[member.key] = value }
        }
        return AuditEvent(
            id: row[0].int,
            at: row[1].int ?? 0,
            accountID: row[2].string,
            upgradeID: row[3].string,
            event: row[4].string ?? "",
            fromStatus: row[5].string,
            toStatus: row[6].string,
            detail: detail
        )
    }

    func auditTrail(accountID: String, limit: Int) throws(StorageError) -> [AuditEvent] {
        try rows(
            "SELECT id, at, account_id, upgrade_id, event, from_status, to_status, detail FROM audit_events WHERE account_id = ? ORDER BY id LIMIT ?",
            [.text(accountID), .integer(Int64(limit))]
        ).map(Self.audit)
    }

    func auditTrail(upgradeID: String, limit: Int) throws(StorageError) -> [AuditEvent] {
        try rows(
            "SELECT id, at, account_id, upgrade_id, event, from_status, to_status, detail FROM audit_events WHERE upgrade_id = ? ORDER BY id LIMIT ?",
            [.text(upgradeID), .integer(Int64(limit))]
        ).map(Self.audit)
    }
}
