/// Leases that keep a batch job to one run at a time, inside a transaction.
public protocol JobLeaseStore {
    /// Stores `lease` if its job has no lease or only one that expired by `now` (`expiresAt <= now`),
    /// and returns nil; otherwise changes nothing and returns the lease that holds the job. Of two
    /// concurrent callers, one gets nil at most.
    func acquireJobLease(_ lease: JobLeaseRecord, now: Int64) throws(StorageError) -> JobLeaseRecord?
    /// Moves the lease's heartbeat and expiry on if `token` still holds `job`; false if it does not
    /// (released, or taken over after it expired).
    func renewJobLease(job: String, token: String, heartbeatAt: Int64, expiresAt: Int64) throws(StorageError) -> Bool
    /// Deletes the lease if `token` still holds `job`; false if it did not.
    func releaseJobLease(job: String, token: String) throws(StorageError) -> Bool
    func jobLease(job: String) throws(StorageError) -> JobLeaseRecord?
    /// Every lease row, live or expired, by job name: what the support console lists.
    func jobLeases() throws(StorageError) -> [JobLeaseRecord]
}
