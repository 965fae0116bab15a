/// Leases that keep a batch job to one run at a time.
extension SQLiteTransaction: JobLeaseStore {
    private static let leaseColumns = "job, holder, token, acquired_at, heartbeat_at, expires_at"

    func acquireJobLease(_ lease: JobLeaseRecord, now: Int64) throws(StorageError) -> JobLeaseRecord? {
        // One statement: insert, or take over a lease that expired; a live one is left as it is.
        try rows(
            """
            INSERT INTO job_leases (\(Self.leaseColumns)) VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT (job) DO UPDATE SET holder = excluded.holder, token = excluded.token,
                acquired_at = excluded.acquired_at, heartbeat_at = excluded.heartbeat_at, expires_at = excluded.expires_at
            WHERE job_leases.expires_at <= ?
            """,
            [
                .text(lease.job), .text(lease.holder), .text(lease.token), .integer(lease.acquiredAt),
                .integer(lease.heartbeatAt), .integer(lease.expiresAt), .integer(now),
            ]
        )
        guard connection.changes == 1 else { return try jobLease(job: lease.job) }
        return nil
    }

    func renewJobLease(job: String, token: String, heartbeatAt: Int64, expiresAt: Int64) throws(StorageError) -> Bool {
        try rows(
            "UPDATE job_leases SET heartbeat_at = ?, expires_at = ? WHERE job = ? AND token = ?",
            [.integer(heartbeatAt), .integer(expiresAt), .text(job), .text(token)]
        )
        return connection.changes == 1
    }

    func releaseJobLease(job: String, token: String) throws(StorageError) -> Bool {
        try rows("DELETE FROM job_leases WHERE job = ? AND token = ?", [.text(job), .text(token)])
        return connection.changes == 1
    }

    func jobLease(job: String) throws(StorageError) -> JobLeaseRecord? {
        guard let row = try rows("SELECT \(Self.leaseColumns) FROM job_leases WHERE job = ?", [.text(job)]).first
        else { return nil }
        return JobLeaseRecord(
            job: row[0].string ?? "",
            holder: row[1].string ?? "",
            token: row[2].string ?? "",
            acquiredAt: row[3].int ?? 0,
            heartbeatAt: row[4].int ?? 0,
            expiresAt: row[5].int ?? 0
        )
    }
}
