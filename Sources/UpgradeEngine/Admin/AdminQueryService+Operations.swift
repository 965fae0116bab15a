/// What the support console shows of the background work (README, "Support console"): batch jobs
/// and their leases, the webhook outbox and the Apple revocation queue. Read-only, each in one
/// transaction, like the other admin questions.
extension AdminQueryService {
    /// The batch jobs' leases, the most recent account imports and the running servers.
    public struct BatchJobs: Sendable, Equatable {
        /// Every lease row, live or expired, by job name. A lease's `token` is known only to its
        /// holder: nothing shows it.
        public var leases: [JobLeaseRecord]
        /// The most recently started imports, newest first.
        public var importRuns: [ImportRunRecord]
        /// The `serve` instances seen in the last `RunningKeyrings.liveSeconds`, by id, each with
        /// its keyring's ids.
        public var instances: [ServeInstanceRecord]
    }

    /// How the webhook outbox stands, with the last failed events (what `webhooks status` prints).
    public struct WebhookStatus: Sendable, Equatable {
        public var counts: WebhookOutboxCounts
        /// Most recently failed first.
        public var failed: [WebhookEventRecord]
        /// Pending events tried without success so far, the longest retried first.
        public var retrying: [WebhookEventRecord]
    }

    /// Apple revocations not done yet: how many, and the first ones due.
    public struct PendingRevocations: Sendable, Equatable {
        public var count: Int
        /// Soonest due first. Each row's sealed token is never shown.
        public var first: [AppleRevocationRecord]
    }

    /// How many rows of each list the console shows.
    public static let operationsListLimit = 50

    public func batchJobs(now: Int64, importRuns limit: Int = operationsListLimit) throws(ServiceFailure) -> BatchJobs {
        do {
            return try store.read { tx in
                BatchJobs(
                    leases: try tx.jobLeases(),
                    importRuns: try tx.importRuns(limit: limit),
                    instances: try tx.serveInstances(seenSince: now - RunningKeyrings.liveSeconds)
                )
            }
        } catch {
            throw Self.readFailure(error)
        }
    }

    public func webhookStatus(failed limit: Int = operationsListLimit) throws(ServiceFailure) -> WebhookStatus {
        do {
            return try store.read { tx in
                WebhookStatus(
                    counts: try tx.webhookOutboxCounts(),
                    failed: try tx.failedWebhookEvents(limit: limit),
                    retrying: try tx.retryingWebhookEvents(limit: limit)
                )
            }
        } catch {
            throw Self.readFailure(error)
        }
    }

    public func pendingRevocations(limit: Int = operationsListLimit) throws(ServiceFailure) -> PendingRevocations {
        do {
            return try store.read { tx in
                PendingRevocations(
                    count: try tx.pendingAppleRevocationCount(),
                    first: try tx.pendingAppleRevocations(limit: limit)
                )
            }
        } catch {
            throw Self.readFailure(error)
        }
    }
}
