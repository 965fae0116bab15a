import Synchronization

/// The client secret per client id, made with `ClientSecretSigner` and reused until shortly before
/// it expires: signing is cheap but not free, and Apple does not need a new secret per call. A
/// reload may switch the key (`replaceCredentials`): the cached secrets go with the old key, so the
/// next call signs a new one with the new key and its key id.
final class AppleClientSecretCache: Sendable {
    private struct Entry {
        let secret: String
        let issuedAt: Int64
        let expiresAt: Int64
    }

    private struct State {
        var credentials: AppleClient.Credentials?
        var entries: [String: Entry] = [:]
        /// Counts replacements, so a secret signed with a key replaced meanwhile is not cached.
        var generation = 0
    }

    private let lifetime: Int64
    private let renewal: Int64
    private let clock: @Sendable () -> Int64
    private let state: Mutex<State>

    init(credentials: AppleClient.Credentials?, lifetime: Int64, renewal: Int64, clock: @escaping @Sendable () -> Int64)
    {
        state = Mutex(State(credentials: credentials))
        self.lifetime = lifetime
        self.renewal = renewal
        self.clock = clock
    }

    /// The key that signs from now on; every cached secret is dropped with the old key.
    func replaceCredentials(_ credentials: AppleClient.Credentials) {
        state.withLock { $0 = State(credentials: credentials, generation: $0.generation + 1) }
    }

    /// The key id secrets are signed with now, if any.
    var keyID: String? { state.withLock { $0.credentials?.keyID } }

    /// A secret for `clientID` valid for at least `renewal` more seconds. Failures are local
    /// configuration problems, reported as `invalid_client` without an HTTP status.
    func secret(for clientID: String) throws(AppleEndpointError) -> String {
        let now = clock()
        let (cached, current, generation) = state.withLock { ($0.entries[clientID], $0.credentials, $0.generation) }
        if let entry = cached, entry.issuedAt <= now, now < entry.expiresAt - renewal {
            return entry.secret
        }
        guard let credentials = current else {
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
        state.withLock { state in
            // A reload between reading the key and now replaced it: this secret is not cached.
            guard state.generation == generation else { return }
            state.entries[clientID] = Entry(secret: secret, issuedAt: now, expiresAt: now + lifetime)
        }
        return secret
    }
}
