import UpgradeEngine

extension AppleIDEmulator {
    /// The knobs where Apple's behaviour is undocumented or has changed over time (docs/apple-protocol.md §7), so
    /// tests can play each variant.
    public struct Configuration: Sendable {
        /// How `email_verified` / `is_private_email` are written: JSON booleans (tokens since early
        /// 2024) or the strings `"true"`/`"false"` (2019–2023 tokens). Facts §1.3.
        public enum BooleanClaimStyle: Sendable {
            case json
            case string
        }

        public var issuer = "https://appleid.apple.com"
        /// `exp - iat` of identity tokens; observed 600 s (2020) and 86 400 s (2022–2024).
        public var identityTokenLifetime: Int64 = 600
        /// Authorization codes are single use and valid 5 minutes.
        public var authorizationCodeLifetime: Int64 = 300
        /// Access tokens: `expires_in` 3600.
        public var accessTokenLifetime: Int64 = 3600
        /// After an app transfer both teams may use the migration endpoints, and tokens carry
        /// `transfer_sub`, for 60 days.
        public var transferWindow: Int64 = 60 * 86_400
        public var booleanClaims = BooleanClaimStyle.json
        /// Notifications' `events` member as a JSON-encoded string (observed) or an object (as
        /// Apple's example shows). Facts §4.
        public var eventsAsString = true
        /// `account-deleted` (current documentation) or `account-delete` (older documentation).
        public var accountDeletedEventType = AppleServerNotification.EventType.accountDeleted
        /// Tolerated clock skew for a client secret's `iat`.
        public var clientSecretLeeway: Int64 = 60

        public init() {}
    }
}
