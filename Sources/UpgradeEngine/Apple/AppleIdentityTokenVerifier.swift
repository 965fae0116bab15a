import Synchronization

/// Verifies identity tokens with Apple's current keys, fetched from `/auth/keys` and cached
/// (docs/apple-protocol.md §1.1): the set is kept for its `Cache-Control: max-age` (bounded), and a token whose
/// `kid` is not in it causes one refetch — Apple rotates keys without notice — at most once per
/// `refetchInterval`, so tokens with made-up `kid`s cannot make us hammer Apple. Callers that need
/// a fetch at the same time share one. When a refetch fails, the keys already held keep being
/// used. The checks themselves are `IdentityTokenVerifier`'s, over the keys held.
public final class AppleIdentityTokenVerifier: IdentityTokenVerifying {
    public struct Configuration: Sendable {
        /// Used when the answer carries no `max-age`.
        public var defaultLifetime: Duration = .seconds(3600)
        /// Bounds on how long a fetched set is used before it is fetched again, whatever `max-age` says.
        public var minimumLifetime: Duration = .seconds(60)
        public var maximumLifetime: Duration = .seconds(86_400)
        /// Refetches for unknown `kid`s start at most once per interval, and after a failed fetch
        /// the next one waits this long (the keys held meanwhile stay in use).
        public var refetchInterval: Duration = .seconds(60)
        /// A monotonic clock (elapsed time); tests move it by hand.
        public var clock: @Sendable () -> Duration = AppleIdentityTokenVerifier.monotonicClock

        public init() {}
    }

    private struct State {
        var keys: JWKSet?
        var expiresAt: Duration = .zero
        /// When the last fetch for an unknown `kid` started (regular fetches do not count: a token
        /// signed with a key rotated in just after one must still get its refetch).
        var lastRefetchStarted: Duration?
        /// Why the last fetch failed and when; cleared by a successful fetch.
        var lastFailure: (reason: String, at: Duration)?
        var inFlight: Task<Void, Never>?
    }

    private enum Decision {
        case use(JWKSet)
        case fetch(Task<Void, Never>)
        case fail(String)
    }

    public let policy: IdentityTokenPolicy
    private let fetcher: any AppleKeySetFetching
    private let configuration: Configuration
    private let state = Mutex(State())

    public init(
        fetcher: any AppleKeySetFetching,
        policy: IdentityTokenPolicy,
        configuration: Configuration = Configuration()
    ) {
        self.fetcher = fetcher
        self.policy = policy
        self.configuration = configuration
    }

    private static let origin = ContinuousClock.now

    @Sendable public static func monotonicClock() -> Duration {
        ContinuousClock.now - origin
    }

    public func verifyIdentityToken(
        _ token: String,
        nonce: IdentityTokenVerifier.NonceExpectation?,
        now: Int64
    ) async throws(IdentityTokenError) -> AppleIdentityClaims {
        let keys = try await keySet(containing: nil)
        do {
            return try IdentityTokenVerifier(keys: keys, policy: policy).verify(token, nonce: nonce, now: now)
        } catch let error where error.code == .unknownKeyID {
            guard let keyID = Self.keyID(of: token, maximumLength: policy.maxTokenLength) else { throw error }
            let refreshed = try await keySet(containing: keyID)
            guard refreshed[keyID] != nil else {
                let failure = state.withLock { $0.lastFailure?.reason }
                // A refetch that failed says nothing about the token: the key may well exist.
                throw IdentityTokenError(
                    failure == nil ? .unknownKeyID : .keysUnavailable,
                    "no key with kid \(IdentityTokenError.quoted(keyID)) in Apple's key set "
                        + (failure.map { "(fetching it again failed: \($0))" }
                            ?? "(fetched again at most once per \(Int(configuration.refetchInterval.seconds)) s)")
                )
            }
            return try IdentityTokenVerifier(keys: refreshed, policy: policy).verify(token, nonce: nonce, now: now)
        }
    }

    /// The key set to verify with (the same keys verify server-to-server notifications). With a
    /// `keyID` the set does not hold, it is fetched again unless such a refetch started, or a fetch
    /// failed, within `refetchInterval`; the answer may still lack the key.
    public func keySet(containing keyID: String?) async throws(IdentityTokenError) -> JWKSet {
        switch decide(keyID: keyID) {
        case .use(let keys):
            return keys
        case .fail(let reason):
            throw IdentityTokenError(.keysUnavailable, "Apple's key set is not available: \(reason)")
        case .fetch(let task):
            await task.value
            let (keys, failure) = state.withLock { ($0.keys, $0.lastFailure?.reason) }
            if let keys { return keys }
            throw IdentityTokenError(.keysUnavailable, "Apple's key set is not available: \(failure ?? "not fetched")")
        }
    }

    private func decide(keyID: String?) -> Decision {
        let now = configuration.clock()
        return state.withLock { state in
            // A fetch under way is joined whatever the reason, so concurrent callers share it.
            if let task = state.inFlight { return .fetch(task) }
            let failedRecently = state.lastFailure.map { now - $0.at < configuration.refetchInterval } ?? false
            if let keys = state.keys {
                if now < state.expiresAt {
                    guard let keyID, keys[keyID] == nil else { return .use(keys) }
                    // An unknown kid: Apple may have rotated. Refetch, at most once per interval.
                    let refetchedRecently =
                        state.lastRefetchStarted.map { now - $0 < configuration.refetchInterval } ?? false
                    if refetchedRecently || failedRecently { return .use(keys) }
                    state.lastRefetchStarted = now
                } else if failedRecently {
                    // Expired, but Apple just failed us: the keys we hold are the best there are.
                    return .use(keys)
                }
            } else if let failure = state.lastFailure, failedRecently {
                return .fail(failure.reason)
            }
            let task = Task { await self.fetch() }
            state.inFlight = task
            return .fetch(task)
        }
    }

    private func fetch() async {
        let result: Result<AppleFetchedKeySet, AppleEndpointError>
        do {
            result = .success(try await fetcher.fetchKeySet())
        } catch {
            result = .failure(error)
        }
        let now = configuration.clock()
        state.withLock { state in
            state.inFlight = nil
            switch result {
            case .success(let fetched):
                state.keys = fetched.keys
                state.expiresAt = now + lifetime(maxAge: fetched.maxAge)
                state.lastFailure = nil
            case .failure(let error):
                state.lastFailure = (error.message, now)
            }
        }
    }

    private func lifetime(maxAge: Int64?) -> Duration {
        guard let maxAge else { return configuration.defaultLifetime }
        return min(max(.seconds(maxAge), configuration.minimumLifetime), configuration.maximumLifetime)
    }

    /// The header's `kid`, if the token is well-formed enough to have one.
    private static func keyID(of token: String, maximumLength: Int) -> String? {
        guard let jws = try? JWSCompact(parsing: token, maximumLength: maximumLength),
            let header = try? JWSHeader(json: jws.header), let keyID = header.keyID, !keyID.isEmpty
        else { return nil }
        return keyID
    }
}
