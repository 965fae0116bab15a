import Synchronization

/// One team access token (`client_credentials`, `scope=user.migration`) shared by every row of a
/// batch (docs/apple-protocol.md §2.2: valid 3600 s). Fetched once, again shortly before it expires, and again when
/// Apple answers a row with `invalid_grant` (consumed or expired). Concurrent rows that all find
/// it missing wait for one fetch instead of each asking Apple.
///
/// The token is a secret: it lives here only, and nothing here prints it.
actor TeamAccessTokenCache {
    private struct Current: Sendable {
        var token: String
        var generation: Int
        var expiresAt: ContinuousClock.Instant
    }

    private let apple: any AppleUserMigrating
    private let clientID: String
    private let retry: AppleRetry
    private var current: Current?
    private var fetching: Task<Current, any Error>?
    private var generation = 0
    /// `current`, readable without a hop to the actor: rows ask for the token once each, from
    /// threads of their own, and a hop there and back was two thread hand-offs per row.
    private nonisolated let published = Mutex<Current?>(nil)

    /// A token is refreshed this long before Apple's `expires_in` runs out, so that a row never
    /// starts with a token that dies on the way.
    private static let refreshMargin: Duration = .seconds(120)

    init(apple: any AppleUserMigrating, clientID: String, retry: AppleRetry) {
        self.apple = apple
        self.clientID = clientID
        self.retry = retry
    }

    /// The current token and its generation, if one is held and not about to expire; nil means
    /// ask ``token()``.
    nonisolated func cachedToken() -> (token: String, generation: Int)? {
        published.withLock { current in
            guard let current, ContinuousClock.now < current.expiresAt else { return nil }
            return (current.token, current.generation)
        }
    }

    /// The current token and its generation (pass the generation to ``invalidate(generation:)``).
    func token() async throws(AppleEndpointError) -> (token: String, generation: Int) {
        if let current, ContinuousClock.now < current.expiresAt {
            return (current.token, current.generation)
        }
        let task: Task<Current, any Error>
        if let fetching {
            task = fetching
        } else {
            generation += 1
            let apple = self.apple
            let clientID = self.clientID
            let retry = self.retry
            let generation = self.generation
            task = Task {
                let response = try await retry.run { () async throws(AppleEndpointError) -> AppleTokenResponse in
                    try await apple.teamAccessToken(clientID: clientID)
                }
                // A short-lived token (not Apple's 3600 s) is still used for at least half its life.
                let lifetime = Duration.seconds(max(0, response.expiresIn))
                let margin = min(Self.refreshMargin, lifetime / 2)
                return Current(
                    token: response.accessToken,
                    generation: generation,
                    expiresAt: ContinuousClock.now + lifetime - margin
                )
            }
            fetching = task
        }
        do {
            let fetched = try await task.value
            if fetching == task { fetching = nil }
            current = fetched
            published.withLock { $0 = fetched }
            return (fetched.token, fetched.generation)
        } catch let error as AppleEndpointError {
            if fetching == task { fetching = nil }
            throw error
        } catch {
            if fetching == task { fetching = nil }
            throw AppleEndpointError(code: .unavailable, httpStatus: nil, message: "the token request was cancelled")
        }
    }

    /// Forgets the token of `generation` after Apple refused it; a newer token is kept, so that many
    /// rows refused with the same old token cause one refetch, not many.
    func invalidate(generation: Int) {
        if current?.generation == generation { current = nil }
        published.withLock { published in
            if published?.generation == generation { published = nil }
        }
    }
}
