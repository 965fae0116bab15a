/// Who runs a batch job and until when: the row that keeps a second run of the job out. Times are
/// Unix seconds.
public struct JobLeaseRecord: Sendable, Equatable {
    /// The job's name, e.g. `transfer prepare TEAMB67890`.
    public var job: String
    /// What a refused run prints: host name, process id and run id. Not a secret.
    public var holder: String
    /// Known to the holder alone: only it renews or releases the lease.
    public var token: String
    public var acquiredAt: Int64
    public var heartbeatAt: Int64
    /// The lease is free from this second on unless its holder renews it first.
    public var expiresAt: Int64

    public init(job: String, holder: String, token: String, acquiredAt: Int64, heartbeatAt: Int64, expiresAt: Int64) {
        self.job = job
        self.holder = holder
        self.token = token
        self.acquiredAt = acquiredAt
        self.heartbeatAt = heartbeatAt
        self.expiresAt = expiresAt
    }
}
