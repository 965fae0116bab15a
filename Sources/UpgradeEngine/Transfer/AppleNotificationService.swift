/// Apple's published signing keys, as the notification endpoint needs them: the current set, fetched
/// again when a payload names a key it does not hold. `AppleIdentityTokenVerifier` is the fetching, caching one.
public protocol AppleKeySetProviding: Sendable {
    func keySet(containing keyID: String?) async throws(IdentityTokenError) -> JWKSet
}

extension AppleIdentityTokenVerifier: AppleKeySetProviding {}

/// Apple's server-to-server notifications (`POST /v1/apple/notifications`, docs/apple-protocol.md §4):
/// the payload is verified with Apple's keys before anything of it is read; a `jti` already
/// processed is acknowledged as a duplicate and changes nothing; otherwise the event is handled
/// (`TransferService.handleNotification`) and then its `jti` recorded. Handling is idempotent, so a
/// crash between the two only means a redelivery is handled again, never that an event is lost.
public struct AppleNotificationService: Sendable {
    public enum Receipt: Sendable, Equatable {
        /// This `jti` was processed before; nothing changed.
        case duplicate
        case processed(TransferNotificationResult.Outcome)
    }

    let store: any UpgradeStore
    let keys: any AppleKeySetProviding
    let verifier: AppleNotificationVerifier
    let transfers: TransferService

    public init(
        store: any UpgradeStore,
        keys: any AppleKeySetProviding,
        allowedAudiences: Set<String>,
        transfers: TransferService
    ) {
        self.store = store
        self.keys = keys
        self.verifier = AppleNotificationVerifier(allowedAudiences: allowedAudiences)
        self.transfers = transfers
    }

    public func receive(payload: String, now: Int64) async throws(SignInFailure) -> Receipt {
        let notification = try await verify(payload, now: now)
        let seen: Bool
        do {
            seen = try store.read { try $0.notificationSeen(jti: notification.jti) }
        } catch {
            throw SignInFailure(
                .storeUnavailable,
                "the database does not answer; Apple will retry",
                cause: UpgradeService.cause(of: error)
            )
        }
        if seen { return .duplicate }
        let outcome: TransferNotificationResult
        do {
            outcome = try transfers.handleNotification(
                type: notification.type.name,
                sub: notification.sub,
                email: notification.email,
                isPrivateEmail: notification.isPrivateEmail,
                eventTime: notification.eventTime,
                now: now
            )
        } catch {
            throw SignInFailure(error)
        }
        do {
            _ = try store.write {
                try $0.recordNotification(jti: notification.jti, type: notification.type.name, now: now)
            }
        } catch {
            throw SignInFailure(
                .storeUnavailable,
                "the notification was handled but could not be recorded; Apple will retry",
                cause: UpgradeService.cause(of: error)
            )
        }
        return .processed(outcome.outcome)
    }

    /// Strict parsing of the compact JWS for its `kid`, Apple's key set (fetched again for an unknown
    /// `kid`), then the signature and claims. Nothing of the payload is trusted before that.
    private func verify(_ payload: String, now: Int64) async throws(SignInFailure) -> AppleNotification {
        let keyID: String?
        do {
            let parts = try JWSCompact(parsing: payload, maximumLength: AppleNotificationVerifier.maximumLength)
            keyID = try JWSHeader(json: parts.header).keyID
        } catch {
            throw SignInFailure(.invalidNotification, "the payload is not a signed notification")
        }
        do {
            let keySet = try await keys.keySet(containing: keyID)
            return try verifier.verify(payload, keys: keySet, now: now)
        } catch {
            throw SignInFailure(.invalidNotification, "the notification was rejected (\(error.code))")
        }
    }
}
