import Foundation
import Synchronization

/// Asks the team's legacy login system whether a password is right, for accounts imported or
/// provisioned with `legacyPassword` (docs/legacy-verification.md): one POST, signed as a Standard
/// Webhook with the secret of `UPGRADE_LEGACY_VERIFY_SECRET_FILE`, of
/// `{"type": "password.verify", "timestamp": ..., "data": {"username", "password"}}`, answered
/// `200 {"result": "match" | "mismatch" | "unknown"}`.
///
/// Anything else is an outage: another status, a redirect (never followed), an answer that is not
/// that JSON, no complete answer within `Endpoint.timeout`. A refused connection is tried once more
/// within the same timeout (nothing was sent); nothing is retried after the legacy system answered
/// or may have seen the request. The whole call, retry included, ends by the timeout, so no worker
/// waits longer. At most `Endpoint.maximumConcurrentCalls` calls run at once: past that the call is
/// an outage at once (`busy`), so a stalled legacy system holds at most that many workers, which the
/// server adds to its pool (`UpgradeApplication`).
///
/// The password is in the request body only: never in a description, an event or a log line.
public final class LegacyPasswordVerifier: Sendable {
    public struct Endpoint: Sendable {
        public var url: String
        /// Newest first; every request is signed with each (`WebhookSecrets`).
        public var secrets: WebhookSecrets
        /// The whole call, connection and retry included (`UPGRADE_LEGACY_VERIFY_TIMEOUT`).
        public var timeout: Duration
        public var maximumConcurrentCalls: Int
        /// After a call ends in an outage, how long a username the legacy system is not asked about
        /// gets the outage's answer, no sooner than that outage took (`outageHold`), unless the legacy
        /// system answers a question meanwhile (`UPGRADE_LEGACY_VERIFY_OUTAGE_PAUSE`): so a legacy
        /// account and an unknown username get the same answer in the same time while the legacy
        /// system is down (docs/legacy-verification.md).
        public var outagePause: Duration

        public init(
            url: String,
            secrets: WebhookSecrets,
            timeout: Duration = .seconds(3),
            maximumConcurrentCalls: Int = 8,
            outagePause: Duration = .seconds(30)
        ) {
            self.url = url
            self.secrets = secrets
            self.timeout = timeout
            self.maximumConcurrentCalls = max(1, maximumConcurrentCalls)
            self.outagePause = outagePause
        }

        public init(
            url: String,
            secret: WebhookSecret,
            timeout: Duration = .seconds(3),
            maximumConcurrentCalls: Int = 8,
            outagePause: Duration = .seconds(30)
        ) {
            self.init(
                url: url,
                secrets: WebhookSecrets(secret),
                timeout: timeout,
                maximumConcurrentCalls: maximumConcurrentCalls,
                outagePause: outagePause
            )
        }
    }

    /// The legacy system's verdict, or why there is none.
    public enum Answer: Sendable, Equatable {
        case match(LegacyProfile)
        case mismatch
        case unknown
        case unavailable(Outage)
    }

    /// Why a call gave no verdict; `reason` is for logs and metrics and names no secret.
    public struct Outage: Sendable, Equatable, CustomStringConvertible {
        public enum Kind: String, Sendable, CaseIterable {
            case cannotConnect = "cannot-connect"
            case timedOut = "timed-out"
            case status
            case redirected
            case invalidAnswer = "invalid-answer"
            case transport
            case busy
        }

        public var kind: Kind
        public var reason: String
        public var description: String { reason }
    }

    /// One finished call, for metrics and logs: the outcome's name (`match`, `mismatch`, `unknown`
    /// or an outage's kind), how long it took, how many attempts it made.
    public struct Call: Sendable {
        public var outcome: String
        public var duration: Duration
        public var attempts: Int
        public var outage: Outage?
    }

    /// Seconds a client is told to wait after an outage (`Retry-After`).
    public static let retryAfterSeconds: Int64 = 5
    /// The largest answer read; a verdict with a profile is far smaller.
    static let answerLimit = 16 * 1024

    /// Its secrets may be replaced by a reload (`replaceSecrets`); each call reads it once.
    private let endpointHolder: Reloadable<Endpoint>
    public var endpoint: Endpoint { endpointHolder.current }
    let wallClock: @Sendable () -> Date
    let onCall: @Sendable (Call) -> Void
    private let transport: AppleClientTransport
    private let inFlight = Atomic<Int>(0)
    /// When the last call that was sent ended in an outage, and how long it took; nil once a call
    /// is answered.
    private let lastOutage = Mutex<(at: ContinuousClock.Instant, took: Duration)?>(nil)

    public init(
        endpoint: Endpoint,
        wallClock: @escaping @Sendable () -> Date = { Date() },
        onCall: @escaping @Sendable (Call) -> Void = { _ in }
    ) {
        self.endpointHolder = Reloadable(endpoint)
        self.wallClock = wallClock
        self.onCall = onCall
        transport = AppleClientTransport(connectTimeout: endpoint.timeout)
    }

    /// Signs later calls with `secrets` (a reload of `UPGRADE_LEGACY_VERIFY_SECRET_FILE`); a call
    /// under way keeps the secrets it started with.
    public func replaceSecrets(_ secrets: WebhookSecrets) {
        var endpoint = endpointHolder.current
        endpoint.secrets = secrets
        endpointHolder.replace(with: endpoint)
    }

    /// Within `Endpoint.outagePause` of a call that ended in an outage (and before any call was
    /// answered since), how long that call took: an outage's answer to a check of the same kind
    /// is then given no sooner than this after the check began (`UpgradeService`). A username the
    /// legacy system is not asked about gets the outage's answer too, in the time a legacy
    /// account's check takes while the system is down: a stalled one answers only when the timeout
    /// ends, a refusing one at once. Nil outside the pause.
    public var outageHold: Duration? {
        let pause = endpoint.outagePause
        return lastOutage.withLock { last in
            guard let last, ContinuousClock.now - last.at < pause else { return nil }
            return last.took
        }
    }

    /// Asks about `username` and `password`, on the calling thread (a worker that may block).
    ///
    /// Every check is asked, within the pause too, so the first check after the legacy system is
    /// back gets its verdict and ends the pause. A call that ends in an outage starts the pause
    /// again and sets `outageHold`; one refused as `busy` sent nothing and changes neither.
    public func verify(username: String, password: String) -> Answer {
        let started = ContinuousClock.now
        var attempts = 0
        let answer = call(username: username, password: password, started: started, attempts: &attempts)
        let outage: Outage?
        let outcome: String
        switch answer {
        case .match: (outcome, outage) = ("match", nil)
        case .mismatch: (outcome, outage) = ("mismatch", nil)
        case .unknown: (outcome, outage) = ("unknown", nil)
        case .unavailable(let why): (outcome, outage) = (why.kind.rawValue, why)
        }
        let ended = ContinuousClock.now
        if attempts > 0 {
            lastOutage.withLock { $0 = outage == nil ? nil : (ended, ended - started) }
        }
        onCall(Call(outcome: outcome, duration: ended - started, attempts: attempts, outage: outage))
        return answer
    }

    private func call(
        username: String,
        password: String,
        started: ContinuousClock.Instant,
        attempts: inout Int
    )
        -> Answer
    {
        guard inFlight.add(1, ordering: .acquiring).newValue <= endpoint.maximumConcurrentCalls else {
            inFlight.subtract(1, ordering: .releasing)
            return .unavailable(
                Outage(kind: .busy, reason: "\(endpoint.maximumConcurrentCalls) calls are already waiting for it")
            )
        }
        defer { inFlight.subtract(1, ordering: .releasing) }
        let endpoint = self.endpoint
        let id = "msg_" + SecureRandom.token(byteCount: 18)
        let now = wallClock()
        let body = Self.body(username: username, password: password, at: now)
        let request = AppleClientTransport.Request(
            method: "POST",
            url: endpoint.url,
            headers: WebhookSender.headers(
                id: id,
                timestamp: Int64(now.timeIntervalSince1970),
                body: body,
                secrets: endpoint.secrets
            ),
            body: body
        )
        let deadline = started.advanced(by: endpoint.timeout)
        while true {
            attempts += 1
            let left = deadline - ContinuousClock.now
            guard left > .milliseconds(1) else {
                return .unavailable(Outage(kind: .timedOut, reason: "no answer within \(endpoint.timeout)"))
            }
            switch transport.sendBlocking(request, limit: Self.answerLimit, timeout: left) {
            case .success(let response):
                return Self.answer(response)
            case .failure(.cannotConnect) where attempts == 1:
                // Nothing was sent: one more try, within what is left of the timeout.
                continue
            case .failure(let failure):
                return .unavailable(Self.outage(failure))
            }
        }
    }

    /// The request body; the password is escaped like any JSON string.
    static func body(username: String, password: String, at date: Date) -> [UInt8] {
        let seconds = Int64(date.timeIntervalSince1970.rounded(.down))
        return JSONValue.object([
            "type": .string("password.verify"),
            "timestamp": .string(RFC3339.utc(seconds: seconds)),
            "data": .object(["username": .string(username), "password": .string(password)]),
        ]).serialized()
    }

    /// The verdict in a response, or why it is not one.
    static func answer(_ response: AppleClientTransport.Response) -> Answer {
        guard response.status == 200 else {
            return .unavailable(Outage(kind: .status, reason: "answered HTTP \(response.status)"))
        }
        guard let json = try? JSONValue.parse(response.body), json.members != nil else {
            return .unavailable(Outage(kind: .invalidAnswer, reason: "the answer is not a JSON object"))
        }
        switch json["result"]?.stringValue {
        case "match": return .match(LegacyProfile(json["profile"]))
        case "mismatch": return .mismatch
        case "unknown": return .unknown
        default:
            return .unavailable(
                Outage(kind: .invalidAnswer, reason: "the answer's result is not match, mismatch or unknown")
            )
        }
    }

    static func outage(_ failure: AppleClientTransport.Failure) -> Outage {
        switch failure {
        case .cannotConnect: Outage(kind: .cannotConnect, reason: failure.description)
        case .timedOut: Outage(kind: .timedOut, reason: failure.description)
        case .redirected: Outage(kind: .redirected, reason: failure.description)
        case .tooLarge: Outage(kind: .invalidAnswer, reason: failure.description)
        case .transport, .insecureConnection, .cancelled: Outage(kind: .transport, reason: failure.description)
        }
    }
}
