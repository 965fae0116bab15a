import UpgradeEngine

/// A server-to-server notification the emulator has signed and queued for delivery (docs/apple-protocol.md §4):
/// POST `{"payload": "<JWS>"}` to the endpoint configured for the app's primary App ID.
public struct AppleServerNotification: Sendable, Equatable {
    public struct EventType: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let emailDisabled = EventType("email-disabled")
        public static let emailEnabled = EventType("email-enabled")
        public static let consentRevoked = EventType("consent-revoked")
        /// Spelled `account-delete` in the older documentation; see
        /// `AppleIDEmulator.Configuration.accountDeletedEventType`.
        public static let accountDeleted = EventType("account-deleted")
    }

    /// The primary App ID (the notification's `aud`); its configured endpoint receives it.
    public let clientID: String
    public let type: EventType
    /// The signed JWS (RS256, same keys as identity tokens).
    public let payload: String

    /// The HTTP body: `{"payload":"<JWS>"}`.
    public var body: JSONValue { .object(["payload": .string(payload)]) }
}
