/// Why a transfer step failed for one user. The raw value is a stable code for the per-row report
/// and the audit trail.
public enum TransferFailureReason: String, Sendable, Hashable, CaseIterable, Codable {
    /// The step was started after the 60-day migration window (docs/apple-protocol.md §3.2). Recovery needs the
    /// app transferred back and the window restarted, so retrying only helps with a new window.
    case windowClosed = "window-closed"
    /// Apple's `invalid_request`: malformed or mismatched credentials, or the user revoked
    /// authorization before the migration finished (docs/apple-protocol.md §3.6).
    case invalidRequest = "invalid-request"
    case invalidClient = "invalid-client"
    /// A consumed or expired per-user access token.
    case invalidGrant = "invalid-grant"
    case unauthorizedClient = "unauthorized-client"
    /// Any other 4xx answer for this user.
    case rejected = "rejected"

    /// Maps the `error` value of Apple's 400 body (docs/apple-protocol.md §2.3); unknown values become ``rejected``.
    public init(appleError: String) {
        switch appleError {
        case "invalid_request": self = .invalidRequest
        case "invalid_client": self = .invalidClient
        case "invalid_grant": self = .invalidGrant
        case "unauthorized_client": self = .unauthorizedClient
        default: self = .rejected
        }
    }
}
