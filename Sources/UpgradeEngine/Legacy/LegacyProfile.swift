/// What the legacy system may say of a user with a match: an email address and a display name,
/// stored for an account created just in time (`UPGRADE_LEGACY_CREATE`). A value the import would
/// refuse is dropped, and `dropped` names it (docs/legacy-verification.md).
public struct LegacyProfile: Sendable, Equatable {
    public var email: String?
    public var displayName: String?
    /// The fields given but refused, with why, for the audit trail.
    public var dropped: [String: String] = [:]

    public init(email: String? = nil, displayName: String? = nil) {
        self.email = email
        self.displayName = displayName
    }

    /// The `profile` member of an answer; anything but an object of strings gives an empty profile.
    init(_ json: JSONValue?) {
        guard let json, json.members != nil else { return }
        if let value = json["email"] {
            if let email = value.stringValue, !email.isEmpty {
                if let refusal = ImportRowValidator.emailRefusal(email) {
                    dropped["email"] = refusal
                } else {
                    self.email = email
                }
            } else if value != .null {
                dropped["email"] = "is not a string"
            }
        }
        if let value = json["displayName"] {
            if let name = value.stringValue, !name.isEmpty {
                if let refusal = ImportRowValidator.displayNameRefusal(name) {
                    dropped["displayName"] = refusal
                } else {
                    displayName = name
                }
            } else if value != .null {
                dropped["displayName"] = "is not a string"
            }
        }
    }
}
