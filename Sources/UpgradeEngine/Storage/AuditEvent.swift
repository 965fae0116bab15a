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

extension AuditEvent {
    /// `detail` as the audit trail stores it: a JSON object of strings, keys in order, so equal
    /// details are equal text. The format is the engine's; a backend keeps the text it is given.
    var detailJSON: String { Self.json(detail: detail) }

    static func json(detail: [String: String]) -> String {
        JSONValue.object(detail.sorted { $0.key < $1.key }.map { JSONValue.Member($0.key, .string($0.value)) })
            .serializedString
    }

    /// The detail that stored `json` holds. A member whose value is not a string, or text that is
    /// not a JSON object, holds none: a trail is still read when one row is damaged.
    static func detail(json: String) -> [String: String] {
        var detail: [String: String] = [:]
        for member in (try? JSONValue.parse(Array(json.utf8)))?.members ?? [] {
            if let value = member.value.stringValue { detail[member.key] = value }
        }
        return detail
    }
}
