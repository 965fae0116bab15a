import Foundation
import Synchronization
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// A count or a result the threads of one test share.
private final class Box<Value: Sendable>: Sendable {
    let value: Mutex<Value>
    init(_ value: Value) { self.value = Mutex(value) }
}

/// What only the PostgreSQL backend has: its isolation levels and retries, its session limits,
/// migrations racing on one database, and its catalog. Everything the storage protocol promises is
/// in `StoreConformanceTests`, run on this backend too.
@Suite(
    "PostgreSQL store",
    .enabled(
        if: TestPostgres.isAvailable,
        "UPGRADE_TEST_POSTGRES is not set: start a cluster with Scripts/dev-postgres and export its URL as UPGRADE_TEST_POSTGRES"
    )
)
struct PostgresStoreTests {
    static let now: Int64 = 1_700_000_000

    static func account(_ name: String) -> AccountRecord {
        AccountRecord(id: "acct-\(name)", username: name, credentialKind: .password, createdAt: now, updatedAt: now)
    }

    /// A function in the test's schema that fails with the given SQLSTATE, as a conflicting
    /// transaction would make a statement fail.
    static func failing(_ db: TestDatabase, sqlstate: String) throws -> String {
        let name = "fail_\(sqlstate.lowercased())"
        let connection = try TestPostgres.connect()
        try connection.execute(
            """
            CREATE FUNCTION \(try #require(db.schema)).\(name)() RETURNS integer LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION 'forced by the test' USING ERRCODE = '\(sqlstate)'; END $$
            """
        )
        return "SELECT \(name)()"
    }

    @Test("writes are SERIALIZABLE, reads a read-only REPEATABLE READ snapshot, and every wait is bounded")
    func transactionSettings() throws {
        let db = try Backend.postgres.database()
        let setting = "SELECT current_setting($1)"
        let write = try db.store.write { tx in
            try ["transaction_isolation", "transaction_read_only"].map {
                try TestDatabase.raw(tx, setting, [.text($0)]).first?.first
            }
        }
        #expect(write == [.text("serializable"), .text("off")])
        let read = try db.store.read { tx in
            try [
                "transaction_isolation", "transaction_read_only", "lock_timeout", "statement_timeout",
                "idle_in_transaction_session_timeout",
            ].map { try TestDatabase.raw(tx, setting, [.text($0)]).first?.first }
        }
        #expect(read == [.text("repeatable read"), .text("on"), .text("5s"), .text("30s"), .text("1min")])
    }

    @Test("the readiness ping fails as unavailable on a database that answers read-only, as a standby does")
    func pingReadOnly() throws {
        let db = try Backend.postgres.database(forProcesses: true)
        try db.store.ping()
        // Twice on one connection that prepares its statements: the second run reuses the first's.
        let prepared = try db.openPostgresStore(preparedStatements: true)
        try prepared.ping()
        try prepared.ping()
        let name = try PostgresConfiguration(url: try #require(db.url)).database
        try TestPostgres.connect().execute("ALTER DATABASE \(name) SET default_transaction_read_only = on")
        let store = try db.reopen()
        let error = #expect(throws: StorageError.self) { try store.ping() }
        #expect(error?.code == .unavailable, "\(String(describing: error))")
        #expect(error?.message.contains("read-only") == true)
        // Writable again (promoted): the same store's next ping is ready, on a new connection.
        try TestPostgres.connect().execute("ALTER DATABASE \(name) RESET default_transaction_read_only")
        try store.ping()
    }

    @Test("a serialization failure runs the whole closure again, and the run that commits saw the other's write")
    func serializationFailureRetries() throws {
        let db = try Backend.postgres.database()
        try db.store.write { try $0.insertAccount(Self.account("alice")) }
        let runs = Box(0)
        let bothRead = DispatchGroup()
        bothRead.enter()
        bothRead.enter()
        let finished = DispatchGroup()
        let outcomes = Box<[String]>([])
        for kind in [CredentialKind.appleOnly, .password] {
            finished.enter()
            Thread {
                var firstRun = true
                do {
                    try db.store.write { tx in
                        runs.value.withLock { $0 += 1 }
                        let stored = try #require(try tx.account(id: "acct-alice"))
                        if firstRun {
                            // Both read version 1 before either writes: one of them cannot commit.
                            firstRun = false
                            bothRead.leave()
                            _ = bothRead.wait(timeout: .now() + 30)
                        }
                        try tx.updateAccountCredentialKind(
                            id: stored.id,
                            kind: kind,
                            expectedVersion: stored.version,
                            now: Self.now
                        )
                    }
                    outcomes.value.withLock { $0.append("committed") }
                } catch {
                    outcomes.value.withLock { $0.append("\(error)") }
                }
                finished.leave()
            }.start()
        }
        try #require(finished.wait(timeout: .now() + 60) == .success)
        #expect(outcomes.value.withLock { $0 } == ["committed", "committed"])
        #expect(runs.value.withLock { $0 } == 3, "the loser ran once more")
        #expect(try db.store.read { try $0.account(id: "acct-alice") }?.version == 3)
    }

    @Test(
        "a transaction that keeps failing with a retryable error runs maxAttempts times, then is busy",
        arguments: [PostgresError.SQLState.serializationFailure, PostgresError.SQLState.deadlockDetected]
    )
    func retriesAreBounded(_ sqlstate: String) throws {
        let db = try Backend.postgres.database()
        let fail = try Self.failing(db, sqlstate: sqlstate)
        var limits = PostgresStore.Limits()
        limits.maxAttempts = 3
        let store = try db.reopenPostgres(limits)
        var runs = 0
        let error = try #require(throws: StorageError.self) {
            try store.write { tx in
                runs += 1
                try tx.appendAudit(AuditEvent(at: Self.now, accountID: "a", upgradeID: nil, event: "attempt"))
                try TestDatabase.raw(tx, fail)
            }
        }
        #expect(error.code == .busy, "\(error)")
        #expect(error.message.contains(sqlstate), "\(error)")
        #expect(runs == 3)
        // The closure swallowing the failure changes nothing: the transaction could not commit.
        runs = 0
        #expect(throws: StorageError.self) {
            try store.write { tx in
                runs += 1
                _ = try? TestDatabase.raw(tx, fail)
            }
        }
        #expect(runs == 3)
        #expect(try store.read { try $0.auditTrail(accountID: "a", limit: 10) }.isEmpty, "nothing committed")
    }

    @Test("a connection lost before COMMIT runs the closure once more on a fresh connection; lost twice, it fails")
    func lostConnectionRetriedOnce() throws {
        let db = try Backend.postgres.database()
        var limits = PostgresStore.Limits()
        limits.maxConnections = 1
        let store = try db.reopenPostgres(limits)
        var runs = 0
        var backends: Set<Int64> = []
        try store.write { tx in
            runs += 1
            if case .integer(let pid) = try TestDatabase.raw(tx, "SELECT pg_backend_pid()").first?.first {
                backends.insert(pid)
            }
            try tx.appendAudit(AuditEvent(at: Self.now, accountID: "a", upgradeID: nil, event: "run \(runs)"))
            if runs == 1 { try TestDatabase.raw(tx, "SELECT pg_terminate_backend(pg_backend_pid())") }
        }
        #expect(runs == 2 && backends.count == 2)
        #expect(try store.read { try $0.auditTrail(accountID: "a", limit: 10) }.map(\.event) == ["run 2"])

        runs = 0
        let error = try #require(throws: StorageError.self) {
            try store.write { tx in
                runs += 1
                try TestDatabase.raw(tx, "SELECT pg_terminate_backend(pg_backend_pid())")
            }
        }
        #expect(runs == 2)
        #expect(error.code == .unavailable && error.message.contains("lost the connection"), "\(error)")
        // The pool recovers: the next transaction gets a working connection.
        #expect(try store.read { try $0.auditTrail(accountID: "a", limit: 10) }.count == 1)
    }

    @Test("a lock held elsewhere ends the wait as busy at lock_timeout, and the store goes on")
    func lockTimeoutIsBusy() throws {
        let db = try Backend.postgres.database()
        try db.store.write { _ = try $0.recordFailure(usernameKey: "alice", now: Self.now) }
        let holder = try PostgresConnection(
            TestPostgres.configuration(),
            settings: [("search_path", try #require(db.schema))]
        )
        try holder.begin()
        try holder.query("SELECT failures FROM login_throttle WHERE username_key = $1 FOR UPDATE", [.text("alice")])
        var limits = PostgresStore.Limits()
        limits.lockTimeoutMilliseconds = 100
        let store = try db.reopenPostgres(limits)
        let error = try #require(throws: StorageError.self) {
            try store.write { _ = try $0.recordFailure(usernameKey: "alice", now: Self.now) }
        }
        #expect(error.code == .busy && error.message.contains("55P03"), "\(error)")
        try holder.rollback()
        #expect(try store.write { try $0.recordFailure(usernameKey: "alice", now: Self.now) }.failures == 2)
    }

    @Test("migrations racing on one database: one applies them all, the others wait and find nothing to do")
    func concurrentMigrations() throws {
        let db = try Backend.postgres.database(migrated: false)
        let schema = try #require(db.schema)
        // The bookkeeping table exists; a third session holds it, so both migrations queue behind it.
        #expect(try db.migrate(through: 0).isEmpty)
        let holder = try PostgresConnection(TestPostgres.configuration(), settings: [("search_path", schema)])
        try holder.begin()
        try holder.execute("LOCK TABLE schema_migrations IN EXCLUSIVE MODE")

        let stores = try [db.reopen(), db.reopen()]
        let applied = Box<[[Int]]>([])
        let failures = Box<[String]>([])
        let finished = DispatchGroup()
        for store in stores {
            finished.enter()
            Thread {
                do {
                    let versions = try store.migrate(now: Self.now).map(\.version)
                    applied.value.withLock { $0.append(versions) }
                } catch {
                    failures.value.withLock { $0.append("\(error)") }
                }
                finished.leave()
            }.start()
        }
        // Both are waiting for the lock (bounded: 30 s at most), then the holder lets go.
        let waiting = """
            SELECT count(*) FROM pg_locks AS l JOIN pg_class AS c ON c.oid = l.relation
            JOIN pg_namespace AS n ON n.oid = c.relnamespace
            WHERE n.nspname = $1 AND c.relname = 'schema_migrations' AND NOT l.granted
            """
        var queued: Int64 = 0
        for _ in 0..<300 where queued < 2 {
            queued = try holder.query(waiting, [.text(schema)]).first?.first?.int ?? 0
            if queued < 2 { usleep(100_000) }
        }
        #expect(queued == 2)
        try holder.commit()
        try #require(finished.wait(timeout: .now() + 60) == .success)

        #expect(failures.value.withLock { $0 }.isEmpty, "\(failures.value.withLock { $0 })")
        let results = applied.value.withLock { $0 }.sorted { $0.count < $1.count }
        #expect(results == [[], EmbeddedSchema.postgres.map(\.version)])
        #expect(try db.store.migrationStatus().allSatisfy { $0.appliedAt == Self.now })
    }

    @Test("migrations starting together on an empty database, the bookkeeping table included, all succeed")
    func concurrentMigrationsFromNothing() throws {
        let db = try Backend.postgres.database(migrated: false)
        let stores = try (0..<3).map { _ in try db.reopen() }
        let applied = Box<[[Int]]>([])
        let failures = Box<[String]>([])
        let start = DispatchGroup()
        start.enter()
        let finished = DispatchGroup()
        for store in stores {
            finished.enter()
            Thread {
                _ = start.wait(timeout: .now() + 30)
                do {
                    let versions = try store.migrate(now: Self.now).map(\.version)
                    applied.value.withLock { $0.append(versions) }
                } catch {
                    failures.value.withLock { $0.append("\(error)") }
                }
                finished.leave()
            }.start()
        }
        start.leave()
        try #require(finished.wait(timeout: .now() + 60) == .success)
        #expect(failures.value.withLock { $0 }.isEmpty, "\(failures.value.withLock { $0 })")
        let results = applied.value.withLock { $0 }.sorted { $0.count < $1.count }
        #expect(results == [[], [], EmbeddedSchema.postgres.map(\.version)])
    }

    @Test("every UNIQUE and PRIMARY KEY index of the schema reads as exactly one typed constraint")
    func everyUniqueConstraintIsMapped() throws {
        let db = try Backend.postgres.database()
        let indexes = try db.store.read { tx in
            try TestDatabase.raw(
                tx,
                """
                SELECT t.relname, i.relname FROM pg_index AS x
                JOIN pg_class AS i ON i.oid = x.indexrelid JOIN pg_class AS t ON t.oid = x.indrelid
                JOIN pg_namespace AS n ON n.oid = t.relnamespace
                WHERE n.nspname = current_schema() AND x.indisunique AND t.relname != 'schema_migrations'
                """
            )
        }
        let typed = indexes.map { row in
            PostgresError(
                .server,
                "duplicate key",
                sqlstate: PostgresError.SQLState.uniqueViolation,
                constraint: row[1].string,
                table: row[0].string
            ).typedConstraint
        }
        #expect(!typed.contains(nil), "\(indexes)")
        #expect(Set(typed.compactMap { $0 }).count == typed.count, "one typed value per index")
        #expect(Set(typed.compactMap { $0 }) == Set(UniqueCollision.allCases.map(\.constraint)))
    }

    @Test("every text column compares byte for byte (COLLATE \"C\"), whatever the database's collation")
    func textColumnsAreByteOrdered() throws {
        let db = try Backend.postgres.database()
        let columns = try db.store.read { tx in
            try TestDatabase.raw(
                tx,
                """
                SELECT a.attrelid::regclass::text, a.attname, coalesce(co.collname, '') FROM pg_attribute AS a
                JOIN pg_class AS c ON c.oid = a.attrelid JOIN pg_namespace AS n ON n.oid = c.relnamespace
                LEFT JOIN pg_collation AS co ON co.oid = a.attcollation
                WHERE n.nspname = current_schema() AND c.relkind = 'r' AND c.relname != 'schema_migrations'
                    AND a.atttypid = 'text'::regtype AND a.attnum > 0 AND NOT a.attisdropped
                """
            )
        }
        #expect(columns.count > 40)
        for column in columns {
            #expect(column[2] == .text("C"), "\(column)")
        }
    }
}
