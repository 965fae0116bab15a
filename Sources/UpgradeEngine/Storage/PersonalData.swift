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

    /// Keys of webhook `data` members that name a person: `keys`, and `fullName` (an object of the
    /// name's parts, `account.converted`, `account.profile-filled`), which the audit trail never holds.
    public static let payloadKeys: Set<String> = keys.union(["fullName"])

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

    /// A webhook body (`{"type", "timestamp", "data"}`) with the values of `payloadKeys` in `data`
    /// (strings, and the `fullName` object) made `null`, keeping every member and its order; nil when
    /// nothing changes (or the body is not the engine's JSON, which a redaction then leaves alone).
    static func redactPayload(_ payload: String) -> String? {
        guard let body = try? JSONValue.parse(Array(payload.utf8)), var members = body.members,
            let index = members.firstIndex(where: { $0.key == "data" }), var data = members[index].value.members
        else { return nil }
        var changed = false
        for position in data.indices {
            guard payloadKeys.contains(data[position].key), data[position].value != .null else { continue }
            data[position].value = .null
            changed = true
        }
        guard changed else { return nil }
        members[index].value = .object(data)
        return JSONValue.object(members).serializedString
    }

    /// A condition on `column` true for every text in which one of `names` (an audit detail's `keys`,
    /// a webhook body's `payloadKeys`) appears as a JSON member name: a cheap first filter (the
    /// engine's JSON is compact, `"key":value`) before `redact` and `redactPayload` decide; a text it
    /// lets through by mistake is simply left as it is.
    static func mentionsKey(column: String, names: Set<String> = keys) -> String {
        "(" + names.sorted().map { "\(column) LIKE '%\"\($0)\":%'" }.joined(separator: " OR ") + ")"
    }
}
