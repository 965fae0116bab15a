import Foundation
import UpgradeEngine

/// How the server reaches Apple: the HTTPS client for `/auth/token`, `/auth/revoke` and
/// `/auth/usermigrationinfo`, and Apple's keys (fetched and cached) for identity tokens and
/// notifications. The same path serves production and `--dev`, where the base URL is the emulator's
/// loopback address.
public struct AppleConnections: Sendable {
    public let client: AppleClient
    /// Identity tokens verified with Apple's keys, which notifications are verified with too.
    public let identityTokens: AppleIdentityTokenVerifier
    /// `/auth/revoke` for the revocation queue and `grant_type=refresh_token` for the Apple link
    /// check: one attempt per call with short timeouts, since both retry with their own backoff
    /// and a deletion's answer waits for the first attempt.
    public let revocations: AppleClient

    public init(baseURL: URL, teamID: String, keyID: String, privateKey: P256PrivateKey, audiences: Set<String>) throws
    {
        var configuration = AppleClient.Configuration(
            baseURL: try AppleClient.BaseURL(baseURL.absoluteString),
            credentials: try AppleClient.Credentials(teamID: teamID, keyID: keyID, privateKey: privateKey)
        )
        configuration.userAgent = "siwa-upgrade"
        client = try AppleClient(configuration: configuration)
        var single = configuration
        single.connectTimeout = .seconds(3)
        single.requestTimeout = .seconds(5)
        single.retry.maximumAttempts = 1
        single.retry.totalTime = .seconds(5)
        revocations = try AppleClient(configuration: single)
        identityTokens = AppleIdentityTokenVerifier(
            fetcher: client,
            policy: try IdentityTokenPolicy(allowedAudiences: audiences)
        )
    }

    /// Signs every later call to Apple with `credentials` (a reload of the Apple key), in both
    /// clients; their cached client secrets are dropped at once.
    public func replaceCredentials(_ credentials: AppleClient.Credentials) {
        client.replaceCredentials(credentials)
        revocations.replaceCredentials(credentials)
    }

    /// Production: the key from `APPLE_PRIVATE_KEY_FILE` and Apple (or an explicit loopback emulator) at
    /// `APPLE_BASE_URL`.
    public static func live(_ settings: ServerSettings) throws -> AppleConnections {
        guard let teamID = settings.teamID, let keyID = settings.keyID, let privateKey = settings.privateKey else {
            throw ServerSettingsError(problems: [
                "APPLE_TEAM_ID, APPLE_KEY_ID and APPLE_PRIVATE_KEY_FILE are required to reach Apple"
            ])
        }
        return try AppleConnections(
            baseURL: settings.appleBaseURL,
            teamID: teamID,
            keyID: keyID,
            privateKey: privateKey,
            audiences: Set(settings.clientIDs)
        )
    }
}
