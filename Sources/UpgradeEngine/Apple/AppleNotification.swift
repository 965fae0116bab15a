/// A verified server-to-server notification from Apple (docs/apple-protocol.md §4): `{"payload": "<JWS>"}` whose JWS
/// is signed with the same keys as identity tokens, with `iss`, `aud`, `iat`, `jti` and one event.
public struct AppleNotification: Sendable, Equatable {
    public enum EventType: Sendable, Equatable {
        case emailEnabled
        case emailDisabled
        case consentRevoked
        /// `account-delete` (older documentation) and `account-deleted` (current) both mean this.
        case accountDeleted
        /// A type this server does not know: acknowledged, recorded, and otherwise ignored.
        case other(String)

        init(_ name: String) {
            switch name {
            case "email-enabled": self = .emailEnabled
            case "email-disabled": self = .emailDisabled
            case "consent-revoked": self = .consentRevoked
            case "account-delete", "account-deleted": self = .accountDeleted
            default: self = .other(name)
            }
        }

        public var name: String {
            switch self {
            case .emailEnabled: "email-enabled"
            case .emailDisabled: "email-disabled"
            case .consentRevoked: "consent-revoked"
            case .accountDeleted: "account-deleted"
            case .other(let name): name
            }
        }
    }

    public var jti: String
    public var audience: String
    public var issuedAt: Int64
    public var type: EventType
    public var sub: String
    /// `event_time` as Apple sends it (milliseconds since the epoch in Apple's examples).
    public var eventTime: Int64?
    public var email: String?
    public var isPrivateEmail: Bool?
}

/// Verifies notification payloads: signature first (RS256, `kid` in Apple's keys), then the claims.
public struct AppleNotificationVerifier: Sendable {
    public let allowedAudiences: Set<String>
    public let issuer: String
    public let leeway: Int64
    public static let maximumLength = 16 * 1024

    public init(allowedAudiences: Set<String>, issuer: String = IdentityTokenPolicy.appleIssuer, leeway: Int64 = 60) {
        self.allowedAudiences = allowedAudiences
        self.issuer = issuer
        self.leeway = leeway
    }

    public func verify(_ payload: String, keys: JWKSet, now: Int64) throws(IdentityTokenError) -> AppleNotification {
        let jws = try IdentityTokenVerifier.verifySignature(
            payload,
            keys: keys,
            maximumLength: Self.maximumLength,
            what: "notification"
        )
        let claims: JSONValue
        do {
            claims = try JSONValue.parse(jws.payload)
        } catch {
            throw IdentityTokenError(.malformed, "notification claims are not JSON: \(error.description)")
        }
        guard claims.members != nil else {
            throw IdentityTokenError(.malformed, "notification claims are not an object")
        }
        guard claims["iss"]?.stringValue == issuer else {
            throw IdentityTokenError(.wrongIssuer, "notification iss is not \(IdentityTokenError.quoted(issuer))")
        }
        guard let audience = claims["aud"]?.stringValue, allowedAudiences.contains(audience) else {
            throw IdentityTokenError(.audienceNotAllowed, "notification aud is not one of the configured client ids")
        }
        guard let issuedAt = claims["iat"]?.int64Value else {
            throw IdentityTokenError(.invalidClaim, "notification has no numeric iat")
        }
        guard issuedAt <= now + leeway else {
            throw IdentityTokenError(.issuedInFuture, "notification iat \(issuedAt) is after now (\(now)) plus leeway")
        }
        guard let jti = claims["jti"]?.stringValue, !jti.isEmpty, jti.utf8.count <= 256 else {
            throw IdentityTokenError(.invalidClaim, "notification has no jti (needed to ignore redeliveries)")
        }
        // Apple's example shows `events` as an object; real deliveries carry it as a JSON-encoded string.
        let events: JSONValue
        switch claims["events"] {
        case .object?:
            events = claims["events"]!
        case .string(let text)?:
            do {
                events = try JSONValue.parse(Array(text.utf8))
            } catch {
                throw IdentityTokenError(.invalidClaim, "notification events string is not JSON: \(error.description)")
            }
        default:
            throw IdentityTokenError(.invalidClaim, "notification has no events object")
        }
        guard let typeName = events["type"]?.stringValue, !typeName.isEmpty else {
            throw IdentityTokenError(.invalidClaim, "notification event has no type")
        }
        guard let sub = events["sub"]?.stringValue, !sub.isEmpty else {
            throw IdentityTokenError(.missingSubject, "notification event has no sub")
        }
        let isPrivateEmail: Bool? =
            switch events["is_private_email"] {
            case .bool(let value)?: value
            case .string("true")?: true
            case .string("false")?: false
            default: nil
            }
        return AppleNotification(
            jti: jti,
            audience: audience,
            issuedAt: issuedAt,
            type: AppleNotification.EventType(typeName),
            sub: sub,
            eventTime: events["event_time"]?.int64Value,
            email: events["email"]?.stringValue,
            isPrivateEmail: isPrivateEmail
        )
    }
}
