/// How both backends apply their embedded migrations and report them (`db migrate`, `db status`):
/// the bookkeeping in `schema_migrations`, the refusal of a database whose applied migration was
/// edited or that is newer than the binary, the one data step no SQL can do, and the skeletons ICU
/// computes. Each store brings what differs: creating the table, the lock that lets one process
/// migrate at a time, and running a migration's script of several statements.
struct SchemaMigrator {
    let migrations: [SchemaMigration]
    /// Where the backend's migrations live, named when an applied one was edited.
    let folder: String

    static let sqlite = SchemaMigrator(migrations: EmbeddedSchema.sqlite, folder: "Schema/sqlite/")
    static let postgres = SchemaMigrator(migrations: EmbeddedSchema.postgres, folder: "Schema/postgres/")

    /// Applies the pending migrations up to and including `version` (all of them when nil) in `tx`,
    /// which holds the backend's migration lock and sees `schema_migrations`; `script` runs one
    /// migration's SQL on the transaction's connection. Returns what it applied.
    func migrate(
        _ tx: any SQLTransaction,
        through version: Int?,
        now: Int64,
        script: (String) throws -> Void
    ) throws(StorageError) -> [MigrationStatus] {
        let applied = try verified(tx)
        var appliedNow: [MigrationStatus] = []
        for migration in migrations where applied[migration.version] == nil && migration.version <= (version ?? .max) {
            do {
                try script(migration.sql)
                // The one data step no SQL can do: re-keying usernames needs the username profile.
                if migration.version == UsernameCheck.migrationVersion { _ = try UsernameCheck.rekey(tx, now: now) }
            } catch {
                throw StorageError(.migration, "migration \(migration.version) (\(migration.name)) failed: \(error)")
            }
            try tx.rows(
                "INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES ($1, $2, $3, $4)",
                [.integer(Int64(migration.version)), .text(migration.name), .text(migration.checksum), .integer(now)]
            )
            appliedNow.append(migration.status(appliedAt: now))
        }
        // Skeletons come from ICU's data: computed by migration 18, and again whenever this
        // binary's ICU is not the one that computed them.
        if applied[UsernameSkeletons.migrationVersion] != nil
            || appliedNow.contains(where: { $0.version == UsernameSkeletons.migrationVersion })
        {
            do {
                _ = try UsernameSkeletons.refreshIfStale(tx)
            } catch {
                throw StorageError(.migration, "computing username skeletons failed: \(error)")
            }
        }
        return appliedNow
    }

    /// Every migration this binary knows, with when it was applied (nil: pending).
    func status(_ tx: any SQLTransaction) throws(StorageError) -> [MigrationStatus] {
        let applied = try Self.applied(tx)
        return migrations.map { $0.status(appliedAt: applied[$0.version]?.appliedAt) }
    }

    /// The applied migrations, refusing a database whose applied migration was edited or that is
    /// newer than this binary.
    private func verified(_ tx: any SQLTransaction) throws(StorageError) -> [Int: MigrationStatus] {
        let applied = try Self.applied(tx)
        let known = Dictionary(uniqueKeysWithValues: migrations.map { ($0.version, $0) })
        for (version, status) in applied.sorted(by: { $0.key < $1.key }) {
            guard let migration = known[version] else {
                throw StorageError(
                    .migration,
                    "database has migration \(version) (\(status.name)) that this binary does not know; upgrade the binary"
                )
            }
            guard migration.checksum == status.checksum else {
                throw StorageError(
                    .migration,
                    "migration \(version) (\(status.name)) was changed after it was applied; restore \(folder) or write a new migration"
                )
            }
        }
        return applied
    }

    private static let tableExists = DialectSQL(
        sqlite: "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'",
        postgres: "SELECT to_regclass('schema_migrations') IS NOT NULL"
    )

    private static func applied(_ tx: any SQLTransaction) throws(StorageError) -> [Int: MigrationStatus] {
        guard try tx.rows(tableExists).first?.first == .integer(1) else { return [:] }
        var result: [Int: MigrationStatus] = [:]
        for row in try tx.rows("SELECT version, name, checksum, applied_at FROM schema_migrations") {
            let status = MigrationStatus(
                version: Int(row[0].int ?? 0),
                name: row[1].string ?? "",
                checksum: row[2].string ?? "",
                appliedAt: row[3].int
            )
            result[status.version] = status
        }
        return result
    }
}

extension SchemaMigration {
    fileprivate func status(appliedAt: Int64?) -> MigrationStatus {
        MigrationStatus(version: version, name: name, checksum: checksum, appliedAt: appliedAt)
    }
}
