import Foundation

extension AppleClient {
    /// The team's Sign in with Apple key (`APPLE_TEAM_ID`, `APPLE_KEY_ID`, `APPLE_PRIVATE_KEY_FILE`):
    /// what every client secret is signed with.
    public struct Credentials: Sendable {
        public let teamID: String
        public let keyID: String
        public let privateKey: P256PrivateKey

        public init(teamID: String, keyID: String, privateKey: P256PrivateKey) throws(ClientSecretError) {
            // The signer checks the identifiers; a throwaway client id is enough to run its checks now
            // instead of on the first request.
            _ = try ClientSecretSigner(teamID: teamID, keyID: keyID, clientID: "x", privateKey: privateKey)
            self.teamID = teamID
            self.keyID = keyID
            self.privateKey = privateKey
        }
    }

    /// Timeouts, retry bounds, size bounds and the client secret's lifetime, with defaults meant for
    /// Apple's production service. Every bound is checked by `AppleClient.init`.
    public struct Configuration: Sendable {
        public var baseURL: BaseURL
        /// Needed for every endpoint but `/auth/keys`; without it those calls fail at once.
        public var credentials: Credentials?
        /// Connecting, and any later stretch without a byte from Apple, may take at most this long.
        public var connectTimeout: Duration = .seconds(5)
        /// One attempt (connect, send, receive the whole answer) may take at most this long.
        public var requestTimeout: Duration = .seconds(15)
        public var retry = RetryPolicy()
        /// Answers larger than this are cut off and refused; Apple's are a few kilobytes (the key set
        /// has its own bound, `JWKSet.maximumJSONBytes`).
        public var maximumResponseBytes = 64 * 1024
        /// A client secret is reused for this long: making one costs an ECDSA signature, and a
        /// leaked one is useful only briefly.
        public var clientSecretLifetime: Int64 = 3600
        /// A cached secret is replaced this long before it expires, so none expires in flight.
        public var clientSecretRenewal: Int64 = 300
        public var userAgent = "siwa-upgrade"
        /// Unix seconds, for the client secret's `iat`/`exp` and HTTP-date `Retry-After` values.
        public var clock: @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
        /// How a retry waits; tests replace it to record the delays instead of sleeping.
        public var sleep: @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
        /// Retries are reported here (never with a secret in them); the default drops them.
        public var onEvent: @Sendable (AppleClientEvent) -> Void = { _ in }

        public init(baseURL: BaseURL = .apple, credentials: Credentials?) {
            self.baseURL = baseURL
            self.credentials = credentials
        }

        /// The first setting that makes no sense, described.
        func validate() throws(AppleClientConfigurationError) {
            func refuse(_ message: String) -> AppleClientConfigurationError {
                AppleClientConfigurationError(.invalidSetting, message)
            }
            guard connectTimeout > .zero, connectTimeout <= .seconds(120) else {
                throw refuse("connectTimeout must be more than 0 and at most 120 seconds")
            }
            guard requestTimeout > .zero, requestTimeout <= .seconds(300) else {
                throw refuse("requestTimeout must be more than 0 and at most 300 seconds")
            }
            guard (1...10).contains(retry.maximumAttempts) else {
                throw refuse("retry.maximumAttempts must be 1 to 10, not \(retry.maximumAttempts)")
            }
            guard retry.initialBackoff > .zero, retry.maximumBackoff >= retry.initialBackoff else {
                throw refuse("retry backoff must be positive, with maximumBackoff >= initialBackoff")
            }
            guard retry.totalTime > .zero, retry.maximumRetryAfter >= .zero else {
                throw refuse("retry.totalTime must be positive and retry.maximumRetryAfter not negative")
            }
            guard (1024...(16 << 20)).contains(maximumResponseBytes) else {
                throw refuse("maximumResponseBytes must be 1 KiB to 16 MiB, not \(maximumResponseBytes)")
            }
            guard (60...ClientSecretSigner.maximumLifetime).contains(clientSecretLifetime) else {
                throw refuse("clientSecretLifetime must be 60 to \(ClientSecretSigner.maximumLifetime) seconds")
            }
            guard clientSecretRenewal >= 0, clientSecretRenewal < clientSecretLifetime else {
                throw refuse("clientSecretRenewal must be at least 0 and less than clientSecretLifetime")
            }
            guard !userAgent.isEmpty, userAgent.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value < 0x7f })
            else {
                throw refuse("userAgent must be printable ASCII")
            }
        }
    }

    /// When and how often a failed call is tried again: only after HTTP 429, any 5xx, or a
    /// transport failure (no connection, reset, timeout) — never after another 4xx, which would
    /// fail the same way again. Waits grow exponentially with jitter, a `Retry-After` from Apple
    /// is honoured, and attempts and total time are both bounded.
    public struct RetryPolicy: Sendable {
        /// Attempts in all, the first included.
        public var maximumAttempts = 4
        /// The wait before the second attempt, doubled for each further one (then jittered).
        public var initialBackoff: Duration = .milliseconds(250)
        public var maximumBackoff: Duration = .seconds(4)
        /// Attempts plus waits may take at most this long; a wait that would end later is not started.
        public var totalTime: Duration = .seconds(30)
        /// A `Retry-After` longer than this ends the call instead of holding it.
        public var maximumRetryAfter: Duration = .seconds(20)

        public init() {}

        /// The wait before attempt `attempt + 1`: the exponential step with "equal jitter" (half
        /// fixed, half random), so callers that failed together do not retry together.
        func backoff(afterAttempt attempt: Int) -> Duration {
            let exponent = min(attempt - 1, 30)
            let step = min(maximumBackoff, initialBackoff * (1 << exponent))
            let half = step / 2
            return half + half * Double.random(in: 0...1)
        }
    }
}
