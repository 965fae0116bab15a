/// One versioned migration: `Schema/<backend>/NNNN_name.sql`, embedded in the binary by `Scripts/embed-schema`.
struct SchemaMigration: Sendable {
    let version: Int
    let name: String
    let sql: String

    /// SHA-256 of the SQL text, recorded when applied so an edited, already-applied migration is detected.
    var checksum: String { Digest.sha256(sql).hexString }
}
