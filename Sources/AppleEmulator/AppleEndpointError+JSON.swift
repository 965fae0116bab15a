import UpgradeEngine

extension AppleEndpointError {
    /// The error body Apple sends with HTTP 400: `{"error":"invalid_grant"}`. The message stays
    /// on our side (logs), as Apple's answers carry no description.
    public var json: JSONValue {
        .object(["error": .string(code.rawValue)])
    }
}
