import Synchronization

/// The client secret per client id, made with `ClientSecretSigner` and reused until shortly before
/// it expires: signing is cheap but not free, and Apple does not need a new secret per call.
final class AppleClientSecretCache: Sendable {
    private struct Entry {
        let secret: String
        let issuedAt: Int64
        let expiresAt: Int64
    }

    private let credentials: AppleClient.Credentials?
    private let lifetime: Int64
    private let renewal: Int64
    private let clock: @Sendable () -> Int64
    private let entries = Mutex<[String: Entry]>([:])

    init(credentials: AppleClient.Credentials?, lifetime: Int64, renewal: Int64, clock: @escaping @Sendable () -> Int64)
    {
        self.credentials = credentials
        self.lifetime = lifetime
        self.renewal = renewal
        self.clock = clock
    }

    /// A secret for `clientID` valid for at least `renewal` more seconds. Failures are local
    /// configuration problems, reported as `invalid_client` without an HTTP status.
    func secret(for clientID: String) throws(AppleEndpointError) -> String {
        let now = clock()
        if let entry = entries.withLock({ $0[clientID] }), entry.issuedAt <= now, now < entry.expiresAt - renewal {
            return entry.secret
        }
        guard let credentials else {
            throw AppleEndpointError(
                code: .invalidClient,
                httpStatus: nil,
                message: "no Sign in with Apple key is configured (APPLE_TEAM_ID, APPLE_KEY_ID, APPLE_PRIVATE_KEY_FILE)"
            )
        }
        let secret: String
        do {
            secret = try ClientSecretSigner(
                teamID: credentials.teamID,
                keyID: credentials.keyID,
                clientID: clientID,
                privateKey: credentials.privateKey
            )
            .make(now: now, lifetime: lifetime)
        } catch {
            throw AppleEndpointError(
                code: .invalidClient,
                httpStatus: nil,
                message: "cannot make a client secret for client id \(IdentityTokenError.quoted(clientID)): \(error)"
            )
        }
        entries.withLock { $0[clientID] = Entry(secret: secret, issuedAt: now, expiresAt: now + lifetime) }
        return secret
    }
}
