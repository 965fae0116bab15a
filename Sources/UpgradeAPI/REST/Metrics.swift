import Foundation
import Synchronization
import UpgradeEngine

/// Prometheus counters and histograms kept in memory and rendered in the text exposition format.
/// Label values come from a closed set (route patterns, status codes, result names), so cardinality
/// stays bounded whatever clients send.
public final class Metrics: Sendable {
    static let latencyBuckets: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
    /// Methods counted under their own name; any other token a client sends is counted as `OTHER`,
    /// so made-up methods cannot grow the series without bound.
    static let namedMethods: Set<String> = [
        "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "CONNECT",
    ]

    private struct Histogram {
        var buckets = [UInt64](repeating: 0, count: Metrics.latencyBuckets.count)
        var count: UInt64 = 0
        var sum: Double = 0

        mutating func record(_ seconds: Double) {
            for (index, bound) in Metrics.latencyBuckets.enumerated() where seconds <= bound {
                buckets[index] += 1
            }
            count += 1
            sum += seconds
        }
    }

    // Keyed by the label values themselves; the label text is built only when scraped.
    private struct RequestKey: Hashable {
        let route: String
        let method: String
        let status: Int
    }

    private struct TransitionKey: Hashable {
        let status: String
        let result: String
    }

    private struct State {
        var passwordHashes: UInt64 = 0
        var passwordHashSeconds: Double = 0
        var failuresHeld: UInt64 = 0
        var failureFloorOverruns: UInt64 = 0
        var requests: [RequestKey: UInt64] = [:]
        var latency: [String: Histogram] = [:]
        var transitions: [TransitionKey: UInt64] = [:]
        var revocationsSent: UInt64 = 0
        var revocationRetries: UInt64 = 0
        var webhooksDelivered: UInt64 = 0
        var webhookRetries: UInt64 = 0
        var webhooksFailed: UInt64 = 0
        var legacyCalls: [String: UInt64] = [:]
        var legacyLatency = Histogram()
        var appleLinkChecks: [AppleLinkChecker.Outcome: UInt64] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    func recordRequest(route: String, method: String, status: Int, seconds: Double) {
        let key = RequestKey(
            route: route,
            method: Self.namedMethods.contains(method) ? method : "OTHER",
            status: status
        )
        state.withLock { state in
            state.requests[key, default: 0] += 1
            state.latency[route, default: Histogram()].record(seconds)
        }
    }

    /// One password key derivation (a real check or a dummy) and the CPU time its thread spent.
    public func recordPasswordHash(cpuSeconds: Double) {
        state.withLock { state in
            state.passwordHashes += 1
            state.passwordHashSeconds += cpuSeconds
        }
    }

    /// One refused credential check held to the failure floor.
    func recordFailureHeld() {
        state.withLock { $0.failuresHeld += 1 }
    }

    /// One refused credential check that took longer than the configured failure floor (the floor
    /// is too short for this machine's load; it is raised for a while after each).
    public func recordFailureFloorOverrun() {
        state.withLock { $0.failureFloorOverruns += 1 }
    }

    /// One upgrade call's outcome: the status it left the upgrade in and the result the client saw.
    func recordTransition(status: String, result: String) {
        state.withLock { $0.transitions[TransitionKey(status: status, result: result), default: 0] += 1 }
    }

    /// One attempt of this instance at an Apple revocation: done (Apple answered 200, or said the
    /// token was already invalid), or deferred for a retry.
    public func recordRevocation(done: Bool) {
        state.withLock { state in
            if done { state.revocationsSent += 1 } else { state.revocationRetries += 1 }
        }
    }

    /// One check of an Apple link's refresh token by this instance, by its outcome.
    public func recordAppleLinkCheck(_ outcome: AppleLinkChecker.Outcome) {
        state.withLock { $0.appleLinkChecks[outcome, default: 0] += 1 }
    }

    /// One call to the legacy login system, by outcome (`match`, `mismatch`, `unknown` or an
    /// outage's kind: a closed set), and how long it took.
    public func recordLegacyCall(_ call: LegacyPasswordVerifier.Call) {
        state.withLock { state in
            state.legacyCalls[call.outcome, default: 0] += 1
            // A check that sent nothing (within the pause after an outage, or busy): no time to record.
            guard call.attempts > 0 else { return }
            let (seconds, attoseconds) = call.duration.components
            state.legacyLatency.record(Double(seconds) + Double(attoseconds) / 1e18)
        }
    }

    /// One attempt of this instance at a webhook event.
    public enum WebhookAttempt: Sendable { case delivered, deferred, failed }

    public func recordWebhook(_ attempt: WebhookAttempt) {
        state.withLock { state in
            switch attempt {
            case .delivered: state.webhooksDelivered += 1
            case .deferred: state.webhookRetries += 1
            case .failed: state.webhooksFailed += 1
            }
        }
    }

    /// A duration in seconds, for a Prometheus sample.
    private static func seconds(_ duration: Duration) -> Double {
        let (whole, attoseconds) = duration.components
        return Double(whole) + Double(attoseconds) / 1e18
    }

    /// The exposition text, with gauges sampled at scrape time: the server's `statistics` and the
    /// engine's `backlog` (nil when the database did not answer: its gauges are left out rather than
    /// failing the scrape).
    func render(
        statistics: HTTPServer.Statistics?,
        backlog: AdminQueryService.Backlog?,
        keyIDs: [String] = [],
        now: Int64
    ) -> String {
        let snapshot = state.withLock { $0 }
        var out = ""
        out += "# HELP http_requests_total Requests answered, by route pattern, method and status.\n"
        out += "# TYPE http_requests_total counter\n"
        let requests = snapshot.requests.map { key, value in
            ("route=\"\(key.route)\",method=\"\(key.method)\",status=\"\(key.status)\"", value)
        }
        for (labels, value) in requests.sorted(by: { $0.0 < $1.0 }) {
            out += "http_requests_total{\(labels)} \(value)\n"
        }
        out += "# HELP http_request_duration_seconds Time from a request's arrival at a worker to its answer.\n"
        out += "# TYPE http_request_duration_seconds histogram\n"
        for (route, histogram) in snapshot.latency.sorted(by: { $0.key < $1.key }) {
            let labels = "route=\"\(route)\""
            for (index, bound) in Self.latencyBuckets.enumerated() {
                out += "http_request_duration_seconds_bucket{\(labels),le=\"\(bound)\"} \(histogram.buckets[index])\n"
            }
            out += "http_request_duration_seconds_bucket{\(labels),le=\"+Inf\"} \(histogram.count)\n"
            out += "http_request_duration_seconds_sum{\(labels)} \(histogram.sum)\n"
            out += "http_request_duration_seconds_count{\(labels)} \(histogram.count)\n"
        }
        out +=
            "# HELP upgrade_transitions_total Upgrade calls, by the status they left the upgrade in and the result answered.\n"
        out += "# TYPE upgrade_transitions_total counter\n"
        let transitions = snapshot.transitions.map { key, value in
            ("status=\"\(key.status)\",result=\"\(key.result)\"", value)
        }
        for (labels, value) in transitions.sorted(by: { $0.0 < $1.0 }) {
            out += "upgrade_transitions_total{\(labels)} \(value)\n"
        }
        out += "# HELP password_hashes_total Password key derivations, real checks and dummies for unknown users.\n"
        out += "# TYPE password_hashes_total counter\n"
        out += "password_hashes_total \(snapshot.passwordHashes)\n"
        out += "# HELP password_hash_cpu_seconds_total CPU time the threads spent in password key derivations.\n"
        out += "# TYPE password_hash_cpu_seconds_total counter\n"
        out += "password_hash_cpu_seconds_total \(snapshot.passwordHashSeconds)\n"
        out += "# HELP credential_failures_held_total Refused credential checks answered at the failure floor.\n"
        out += "# TYPE credential_failures_held_total counter\n"
        out += "credential_failures_held_total \(snapshot.failuresHeld)\n"
        out +=
            "# HELP credential_failure_floor_overruns_total Refused credential checks that took longer than "
            + "the failure floor (raise UPGRADE_FAILURE_FLOOR_MS).\n"
        out += "# TYPE credential_failure_floor_overruns_total counter\n"
        out += "credential_failure_floor_overruns_total \(snapshot.failureFloorOverruns)\n"
        out += "# HELP upgrade_apple_revocations_sent_total Apple refresh tokens this instance revoked at Apple.\n"
        out += "# TYPE upgrade_apple_revocations_sent_total counter\n"
        out += "upgrade_apple_revocations_sent_total \(snapshot.revocationsSent)\n"
        out +=
            "# HELP upgrade_apple_revocation_retries_total Revocation attempts that failed and were scheduled again.\n"
        out += "# TYPE upgrade_apple_revocation_retries_total counter\n"
        out += "upgrade_apple_revocation_retries_total \(snapshot.revocationRetries)\n"
        out += "# HELP upgrade_webhooks_delivered_total Webhook events this instance delivered (2xx).\n"
        out += "# TYPE upgrade_webhooks_delivered_total counter\n"
        out += "upgrade_webhooks_delivered_total \(snapshot.webhooksDelivered)\n"
        out += "# HELP upgrade_webhook_retries_total Webhook attempts that failed and were scheduled again.\n"
        out += "# TYPE upgrade_webhook_retries_total counter\n"
        out += "upgrade_webhook_retries_total \(snapshot.webhookRetries)\n"
        out += "# HELP upgrade_webhooks_failed_total Webhook events this instance gave up after the retry window.\n"
        out += "# TYPE upgrade_webhooks_failed_total counter\n"
        out += "upgrade_webhooks_failed_total \(snapshot.webhooksFailed)\n"
        out +=
            "# HELP upgrade_legacy_verify_calls_total Checks for the legacy login system, by outcome "
            + "(busy: not sent, too many already waiting).\n"
        out += "# TYPE upgrade_legacy_verify_calls_total counter\n"
        for (outcome, value) in snapshot.legacyCalls.sorted(by: { $0.key < $1.key }) {
            out += "upgrade_legacy_verify_calls_total{outcome=\"\(outcome)\"} \(value)\n"
        }
        out += "# HELP upgrade_legacy_verify_duration_seconds Time a call to the legacy login system took.\n"
        out += "# TYPE upgrade_legacy_verify_duration_seconds histogram\n"
        for (index, bound) in Self.latencyBuckets.enumerated() {
            out +=
                "upgrade_legacy_verify_duration_seconds_bucket{le=\"\(bound)\"} \(snapshot.legacyLatency.buckets[index])\n"
        }
        out += "upgrade_legacy_verify_duration_seconds_bucket{le=\"+Inf\"} \(snapshot.legacyLatency.count)\n"
        out += "upgrade_legacy_verify_duration_seconds_sum \(snapshot.legacyLatency.sum)\n"
        out += "upgrade_legacy_verify_duration_seconds_count \(snapshot.legacyLatency.count)\n"
        out +=
            "# HELP upgrade_apple_link_checks_total Apple links whose refresh token this instance checked, by outcome.\n"
        out += "# TYPE upgrade_apple_link_checks_total counter\n"
        for outcome in AppleLinkChecker.Outcome.allCases {
            out +=
                "upgrade_apple_link_checks_total{outcome=\"\(outcome.rawValue)\"} \(snapshot.appleLinkChecks[outcome] ?? 0)\n"
        }
        if let newest = keyIDs.first {
            // Ids only, never a key: what `keys status` and the logs show. Instances whose `newest`
            // differ seal under different keys (docs/architecture.md §10.4).
            out +=
                "# HELP upgrade_keyring_info The keyring this instance holds: the key it seals under and every id it lists.\n"
            out += "# TYPE upgrade_keyring_info gauge\n"
            out += "upgrade_keyring_info{newest=\"\(newest)\",keys=\"\(keyIDs.joined(separator: ","))\"} 1\n"
        }
        func gauge(_ name: String, _ help: String, _ value: Int) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) gauge\n\(name) \(Double(value))\n"
        }
        if let statistics {
            gauge("http_worker_queue_depth", "Requests waiting for a worker thread.", statistics.queuedRequests)
            let oldest = "How long the oldest request waiting for a worker thread has waited (0: none waits)."
            let wait = "Time requests waited for a worker thread, and how many a worker took."
            out += "# HELP http_worker_queue_oldest_wait_seconds \(oldest)\n"
            out += "# TYPE http_worker_queue_oldest_wait_seconds gauge\n"
            out += "http_worker_queue_oldest_wait_seconds \(Self.seconds(statistics.oldestQueuedWait))\n"
            out += "# HELP http_worker_queue_wait_seconds \(wait)\n# TYPE http_worker_queue_wait_seconds summary\n"
            out += "http_worker_queue_wait_seconds_sum \(Self.seconds(statistics.queueWaitTotal))\n"
            out += "http_worker_queue_wait_seconds_count \(statistics.requestsDequeued)\n"
            gauge("http_connections_open", "Open client connections.", statistics.connectionsOpen)
            // What the HTTP server refuses itself, before any handler: never in http_requests_total.
            out += "# HELP http_connections_refused_total Connections answered 503 and closed at accept, by reason.\n"
            out += "# TYPE http_connections_refused_total counter\n"
            out += "http_connections_refused_total{reason=\"connection-limit\"} \(statistics.connectionsRefused)\n"
            out +=
                "http_connections_refused_total{reason=\"client-connection-limit\"} \(statistics.connectionsRefusedPerClient)\n"
            out += "# HELP http_requests_refused_total Requests the HTTP server answered itself, by reason: "
            out += "server-busy (shed by queueing delay), malformed (4xx and closed), timed-out (408).\n"
            out += "# TYPE http_requests_refused_total counter\n"
            out += "http_requests_refused_total{reason=\"server-busy\"} \(statistics.requestsRefusedBusy)\n"
            out += "http_requests_refused_total{reason=\"malformed\"} \(statistics.requestsMalformed)\n"
            out += "http_requests_refused_total{reason=\"timed-out\"} \(statistics.requestsTimedOut)\n"
        }
        guard let backlog else { return out }
        let revocations = "Apple refresh tokens of deleted accounts not yet revoked at Apple."
        gauge("upgrade_apple_revocations_pending", revocations, backlog.pendingAppleRevocations)
        gauge("upgrade_webhooks_pending", "Webhook events neither delivered nor given up.", backlog.webhooks.pending)
        let failed = "Webhook events given up after their retry window (replay them)."
        gauge("upgrade_webhooks_failed", failed, backlog.webhooks.failed)
        let age = backlog.webhooks.oldestPendingAt.map { Int(max(0, now - $0)) } ?? 0
        let ageHelp = "Age of the oldest pending webhook event (0: none)."
        gauge("upgrade_webhooks_oldest_pending_age_seconds", ageHelp, age)
        let linkAge = backlog.oldestDueAppleLinkCheck.map { Int(max(0, now - $0)) } ?? 0
        let linkHelp = "How long the oldest due Apple link check has waited (0: none waits)."
        gauge("upgrade_apple_link_check_oldest_due_age_seconds", linkHelp, linkAge)
        let legacy = "Accounts whose password only the legacy login system can check (no hash yet)."
        gauge("upgrade_accounts_legacy_password", legacy, backlog.legacyPasswords)
        let passwords = "Accounts with a password hash the server checks, still to upgrade (legacy ones not included)."
        gauge("upgrade_accounts_password", passwords, backlog.passwordAccounts)
        gauge("upgrade_accounts_apple_only", "Accounts that sign in with Apple only.", backlog.appleOnlyAccounts)
        if let clients = backlog.clientsInDebt {
            let help = "Clients whose failed credential checks or wrong admin tokens still count against them."
            gauge("client_throttle_clients", help, clients)
        }
        return out
    }
}
