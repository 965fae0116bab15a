/// The running `serve` processes and their keyrings' ids (`ServeInstanceStore`). Key ids are
/// letters, digits, `-` and `_` (`SecretKeyFile`), so a comma joins them without escaping.
extension SQLTransaction {
    func recordServeInstance(_ instance: ServeInstanceRecord) throws(StorageError) {
        try send(
            """
            INSERT INTO serve_instances (instance_id, host, pid, listen, key_ids, started_at, seen_at)
                VALUES ($1, $2, $3, $4, $5, $6, $7)
                ON CONFLICT (instance_id) DO UPDATE SET listen = excluded.listen, key_ids = excluded.key_ids,
                    seen_at = excluded.seen_at
            """,
            [
                .text(instance.id), .text(instance.host), .integer(instance.pid), .text(instance.listen),
                .text(instance.keyIDs.joined(separator: ",")), .integer(instance.startedAt),
                .integer(instance.seenAt),
            ]
        )
    }

    func removeServeInstance(id: String) throws(StorageError) -> Bool {
        try rows("DELETE FROM serve_instances WHERE instance_id = $1", [.text(id)])
        return changes > 0
    }

    func serveInstances(seenSince since: Int64) throws(StorageError) -> [ServeInstanceRecord] {
        try rows(
            """
            SELECT instance_id, host, pid, listen, key_ids, started_at, seen_at FROM serve_instances
                WHERE seen_at >= $1 ORDER BY instance_id
            """,
            [.integer(since)]
        ).map {
            ServeInstanceRecord(
                id: $0[0].string ?? "",
                host: $0[1].string ?? "",
                pid: $0[2].int ?? 0,
                listen: $0[3].string ?? "",
                keyIDs: ($0[4].string ?? "").split(separator: ",").map(String.init),
                startedAt: $0[5].int ?? 0,
                seenAt: $0[6].int ?? 0
            )
        }
    }

    func forgetServeInstances(seenBefore before: Int64) throws(StorageError) -> Int {
        try rows("DELETE FROM serve_instances WHERE seen_at < $1", [.integer(before)])
        return changes
    }
}
