/// Leases that keep a batch job to one run at a time.
extension SQLTransaction {
    func acquireJobLease(_ lease: JobLeaseRecord, now: Int64) throws(StorageError) -> JobLeaseRecord? {
        // One statement: insert, or take over a lease that expired; a live one is left as it is.
        try rows(
            """
            INSERT INTO job_leases (\(JobLeaseSQL.leaseColumns)) VALUES ($1, $2, $3, $4, $5, $6)
            ON CONFLICT (job) DO UPDATE SET holder = excluded.holder, token = excluded.token,
                acquired_at = excluded.acquired_at, heartbeat_at = excluded.heartbeat_at, expires_at = excluded.expires_at
            WHERE job_leases.expires_at <= $7
            """,
            [
                .text(lease.job), .text(lease.holder), .text(lease.token), .integer(lease.acquiredAt),
                .integer(lease.heartbeatAt), .integer(lease.expiresAt), .integer(now),
            ]
        )
        guard changes == 1 else { return try jobLease(job: lease.job) }
        return nil
    }

    func renewJobLease(job: String, token: String, heartbeatAt: Int64, expiresAt: Int64) throws(StorageError) -> Bool {
        try rows(
            "UPDATE job_leases SET heartbeat_at = $1, expires_at = $2 WHERE job = $3 AND token = $4",
            [.integer(heartbeatAt), .integer(expiresAt), .text(job), .text(token)]
        )
        return changes == 1
    }

    func releaseJobLease(job: String, token: String) throws(StorageError) -> Bool {
        try rows("DELETE FROM job_leases WHERE job = $1 AND token = $2", [.text(job), .text(token)])
        return changes == 1
    }

    func jobLease(job: String) throws(StorageError) -> JobLeaseRecord? {
        try rows("SELECT \(JobLeaseSQL.leaseColumns) FROM job_leases WHERE job = $1", [.text(job)]).first
            .map(Self.jobLeaseRecord)
    }

    func jobLeases() throws(StorageError) -> [JobLeaseRecord] {
        try rows("SELECT \(JobLeaseSQL.leaseColumns) FROM job_leases ORDER BY job", []).map(Self.jobLeaseRecord)
    }

    private static func jobLeaseRecord(_ row: [SQLValue]) -> JobLeaseRecord {
        JobLeaseRecord(
            job: row[0].string ?? "",
            holder: row[1].string ?? "",
            token: row[2].string ?? "",
            acquiredAt: row[3].int ?? 0,
            heartbeatAt: row[4].int ?? 0,
            expiresAt: row[5].int ?? 0
        )
    }
}

private enum JobLeaseSQL {
    static let leaseColumns = "job, holder, token, acquired_at, heartbeat_at, expires_at"
}
