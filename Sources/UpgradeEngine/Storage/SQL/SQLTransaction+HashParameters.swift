/// Sealed parameter sets of Firebase scrypt and keyed HMAC hashes.
extension SQLTransaction {
    func insertHashParameterSet(_ record: HashParameterSetRecord) throws(StorageError) {
        try rows(
            "INSERT INTO hash_parameter_sets (id, kind, sealed, created_at) VALUES ($1, $2, $3, $4)",
            [.integer(record.id), .text(record.kind), .blob(record.sealed), .integer(record.createdAt)]
        )
    }

    func hashParameterSets() throws(StorageError) -> [HashParameterSetRecord] {
        try rows("SELECT id, kind, sealed, created_at FROM hash_parameter_sets ORDER BY id").map { row in
            HashParameterSetRecord(
                id: row[0].int ?? 0,
                kind: row[1].string ?? "",
                sealed: row[2].bytes ?? [],
                createdAt: row[3].int ?? 0
            )
        }
    }
}
