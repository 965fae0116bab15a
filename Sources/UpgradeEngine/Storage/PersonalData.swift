/// What names a person in the rows an account leaves outside its own tables (audit details, webhook
/// payloads), and how deleting the account redacts it (docs/architecture.md §7.1). The account's own
/// rows (profile, link, transfer record, upgrades...) go with it by the schema's cascades; these
/// stay, because the audit trail is kept and the outbox is replayed.
public enum PersonalData {
    /// Keys whose values name a person: a username, an email address, a display name, an Apple id.
    /// The audit trail's trigger (migration 17) lets a row change only by replacing values of exactly
    /// these keys with `redactedMarker`.
    public static let keys: Set<String> = [
        "sub", "oldSub", "newSub", "transferSub", "username", "previous", "email", "displayName",
    ]

    /// What replaces a redacted value in an audit detail (webhook payloads carry `null` instead).
    public static let redactedMarker = "[redacted]"

    /// `detail` with the values of `keys` replaced by the marker: every one of them in a row of the
    /// deleted account itself (`everyValue`), only those equal to one of `values` in another row.
    static func redact(_ detail: [String: String], everyValue: Bool, values: Set<String>) -> [String: String] {
        var redacted = detail
        for (key, value) in detail where keys.contains(key) && value != redactedMarker {
            if everyValue || values.contains(value) { redacted[key] = redactedMarker }
        }
        return redacted
    }

    /// A webhook body (`{"type", "timestamp", "data"}`) with the string values of `keys` in `data`
    /// made `null`, keeping every member and its order; nil when nothing changes (or the body is not
    /// the engine's JSON, which a redaction then leaves alone).
    static func redactPayload(_ payload: String) -> String? {
        guard let body = try? JWSJSON.parse(Array(payload.utf8)), var members = body.members,
            let index = members.firstIndex(where: { $0.key == "data" }), var data = members[index].value.members
        else { return nil }
        var changed = false
        for position in data.indices {
            guard keys.contains(data[position].key), data[position].value.stringValue != nil else { continue }
            data[position].value = .null
            changed = true
        }
        guard changed else { return nil }
        members[index].value = .object(data)
        return JWSJSON.object(members).serializedString
    }

    /// A condition on `column` true for every text in which one of `keys` appears as a JSON member
    /// name: a cheap first filter (the engine's JSON is compact, `"key":value`) before `redact` and
    /// `redactPayload` decide; a text it lets through by mistake is simply left as it is.
    static func mentionsKey(column: String) -> String {
        "(" + keys.sorted().map { "\(column) LIKE '%\"\($0)\":%'" }.joined(separator: " OR ") + ")"
    }
}
