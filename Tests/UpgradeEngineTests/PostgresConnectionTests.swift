import Foundation
import Synchronization
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

extension TestPostgres {
    /// A table of its own for one test, `(id integer PRIMARY KEY, v integer)` with rows 1 and 2,
    /// dropped by the returned closure.
    static func makeTable(_ connection: PostgresConnection) throws -> (name: String, drop: () -> Void) {
        let name = "pgtest_" + UUID().uuidString.prefix(8).lowercased()
        try connection.execute("CREATE TABLE \(name) (id integer PRIMARY KEY, v integer NOT NULL)")
        try connection.execute("INSERT INTO \(name) VALUES (1, 0), (2, 0)")
        return (name, { try? connection.execute("DROP TABLE IF EXISTS \(name)") })
    }
}

/// A value the threads of one test share.
private final class Shared<Value: Sendable>: Sendable {
    let value: Mutex<Value>
    init(_ value: Value) { self.value = Mutex(value) }
}

@Suite(
    "PostgreSQL connection and pool",
    .enabled(
        if: TestPostgres.isAvailable,
        "UPGRADE_TEST_POSTGRES is not set: start a cluster with Scripts/dev-postgres and export its URL as UPGRADE_TEST_POSTGRES"
    )
)
struct PostgresConnectionTests {
    @Test("by default a statement is the unnamed one, parsed with its run: one round trip, nothing left on the server")
    func unnamedStatements() throws {
        let connection = try TestPostgres.connect()
        let sql = "SELECT $1::bigint + 1"
        let before = connection.roundTrips
        #expect(try connection.query(sql, [.integer(41)]) == [[.integer(42)]])
        #expect(try connection.query(sql, [.integer(1)]) == [[.integer(2)]])
        #expect(connection.roundTrips == before + 2)
        #expect(connection.preparedStatementCount == 0)
        // What a transaction pooler needs: no named statement for the next transaction to miss.
        #expect(try connection.query("SELECT count(*) FROM pg_prepared_statements") == [[.integer(0)]])
    }

    @Test("with prepared_statements=on a statement is prepared once per connection, sent with its first run")
    func preparedStatementReuse() throws {
        var configuration = try TestPostgres.configuration()
        configuration.preparedStatements = true
        let connection = try PostgresConnection(configuration, settings: TestPostgres.settings)
        let sql = "SELECT $1::bigint + 1"
        let before = connection.roundTrips
        #expect(try connection.query(sql, [.integer(41)]) == [[.integer(42)]])
        #expect(connection.roundTrips == before + 1)
        #expect(try connection.query(sql, [.integer(1)]) == [[.integer(2)]])
        #expect(connection.roundTrips == before + 2)
        #expect(connection.preparedStatementCount == 1)
        let names = try connection.query("SELECT name FROM pg_prepared_statements ORDER BY name")
        #expect(names == [[.text("siwa_1")], [.text("siwa_2")]])
        // Another connection has statements of its own.
        let other = try PostgresConnection(configuration)
        #expect(try other.query(sql, [.integer(9)]) == [[.integer(10)]])
        #expect(other.preparedStatementCount == 1)
    }

    @Test("settings are made in each transaction, behind its BEGIN at no round trip, and end with it")
    func settingsPerTransaction() throws {
        let connection = try TestPostgres.connect()
        let show = "SELECT current_setting('lock_timeout'), current_setting('bytea_output')"
        // No startup options: outside a transaction the server's defaults hold.
        #expect(try connection.query(show) == [[.text("0"), .text("hex")]])
        let before = connection.roundTrips
        try connection.begin()
        #expect(try connection.query(show) == [[.text("20s"), .text("hex")]])
        #expect(connection.roundTrips == before + 1)
        try connection.commit()
        #expect(try connection.query("SELECT current_setting('lock_timeout')") == [[.text("0")]])
        // A transaction that sent nothing sends nothing, its settings included.
        let idle = connection.roundTrips
        try connection.begin()
        try connection.commit()
        #expect(connection.roundTrips == idle)
    }

    @Test(
        "BEGIN and queued writes travel with the next statement, COMMIT with the last writes; ROLLBACK is not waited for"
    )
    func pipelining() throws {
        let connection = try TestPostgres.connect()
        let observer = try TestPostgres.connect()
        let (table, drop) = try TestPostgres.makeTable(connection)
        defer { drop() }
        let insert = "INSERT INTO \(table) VALUES ($1, 0)"
        let before = connection.roundTrips
        try connection.begin(.serializable)
        for id in 3...5 { try connection.enqueue(insert, [.integer(Int64(id))]) }
        #expect(connection.roundTrips == before, "nothing sent yet")
        #expect(try connection.query("SELECT count(*) FROM \(table)") == [[.integer(5)]])
        #expect(connection.roundTrips == before + 1)
        try connection.enqueue(insert, [.integer(6)])
        try connection.commit()
        #expect(connection.roundTrips == before + 2)
        #expect(try observer.query("SELECT count(*) FROM \(table)") == [[.integer(6)]])

        // A queued write that fails is thrown by the statement it travelled with, which never ran.
        try connection.begin()
        try connection.enqueue(insert, [.integer(6)])
        let failed = try #require(throws: PostgresError.self) { try connection.query("DELETE FROM \(table)") }
        #expect(failed.sqlstate == PostgresError.SQLState.uniqueViolation, "\(failed)")
        #expect(connection.transactionStatus == .failed)
        try connection.rollback()
        #expect(connection.roundTrips == before + 3, "the ROLLBACK's answer is read with the next round trip")
        #expect(try connection.query("SELECT count(*) FROM \(table)") == [[.integer(6)]])
        #expect(connection.transactionStatus == .idle)
        #expect(connection.roundTrips == before + 4)

        // A long run of writes goes out in bounded slices.
        try connection.begin()
        for id in 7..<(7 + PostgresConnection.maxQueued * 2) { try connection.enqueue(insert, [.integer(Int64(id))]) }
        #expect(connection.roundTrips == before + 6)
        try connection.commit()
        #expect(
            try observer.query("SELECT count(*) FROM \(table)") == [
                [.integer(Int64(6 + PostgresConnection.maxQueued * 2))]
            ]
        )
    }

    @Test("text, bigint, bytea and NULL come back exactly as bound")
    func roundTripOfEachType() throws {
        let connection = try TestPostgres.connect()
        try connection.execute("CREATE TEMP TABLE round_trip (t text, i bigint, b bytea)")
        let rows: [[SQLValue]] = [
            [.text(""), .integer(0), .blob([])],
            [.text("ünïcødé ✓ O'Brien \\ \"quoted\" $1 %s"), .integer(.max), .blob(Array(0...255))],
            [.text(String(repeating: "long ", count: 2000)), .integer(.min), .blob([0, 0, 0])],
            [.null, .null, .null],
        ]
        for row in rows { try connection.query("INSERT INTO round_trip (t, i, b) VALUES ($1, $2, $3)", row) }
        #expect(connection.changes == 1)
        let back = try connection.query("SELECT t, i, b FROM round_trip ORDER BY i NULLS LAST, t")
        #expect(back == [rows[2], rows[0], rows[1], rows[3]])
        // Other integer widths and booleans read as integers.
        let small = try connection.query("SELECT 7::integer, 3::smallint, true, false, NULL::bigint")
        #expect(small == [[.integer(7), .integer(3), .integer(1), .integer(0), .null]])
        #expect(try connection.query("UPDATE round_trip SET i = i WHERE i IS NOT NULL").isEmpty)
        #expect(connection.changes == 3)
    }

    @Test("text with a NUL is refused before it is sent, and the message does not quote it")
    func nulRefused() throws {
        let connection = try TestPostgres.connect()
        let error = try #require(throws: PostgresError.self) {
            try connection.query("SELECT $1::text", [.text("secret\u{0}tail")])
        }
        #expect(error.kind == .misuse)
        #expect(!error.description.contains("secret"))
        #expect(try connection.query("SELECT $1::text", [.text("still usable")]) == [[.text("still usable")]])
    }

    @Test("a commit is seen by another connection; a rollback leaves nothing")
    func transactions() throws {
        let connection = try TestPostgres.connect()
        let observer = try TestPostgres.connect()
        let (table, drop) = try TestPostgres.makeTable(connection)
        defer { drop() }
        let count = "SELECT count(*) FROM \(table)"

        try connection.begin(.serializable)
        try connection.query("INSERT INTO \(table) VALUES ($1, $2)", [.integer(3), .integer(0)])
        #expect(connection.transactionStatus == .inTransaction)
        #expect(try observer.query(count) == [[.integer(2)]])
        try connection.commit()
        #expect(try observer.query(count) == [[.integer(3)]])

        try connection.begin(.repeatableRead)
        try connection.query("DELETE FROM \(table)")
        try connection.rollback()
        #expect(try observer.query(count) == [[.integer(3)]])

        // The helper rethrows the body's own error unchanged, after rolling back.
        struct Stop: Error, Equatable {}
        #expect(throws: Stop()) {
            try connection.transaction {
                try connection.query("DELETE FROM \(table)")
                throw Stop()
            }
        }
        #expect(connection.transactionStatus == .idle)
        #expect(try observer.query(count) == [[.integer(3)]])

        // PostgreSQL answers COMMIT of a failed transaction with ROLLBACK and no error: it is one here.
        try connection.begin()
        try connection.query("DELETE FROM \(table) WHERE id = 3")
        #expect(throws: PostgresError.self) { try connection.query("SELECT 1 / 0") }
        let commit = try #require(throws: PostgresError.self) { try connection.commit() }
        #expect(commit.sqlstate == PostgresError.SQLState.inFailedSQLTransaction)
        #expect(try observer.query(count) == [[.integer(3)]])

        // A read-only transaction refuses a write.
        try connection.begin(.repeatableRead, readOnly: true)
        let write = try #require(throws: PostgresError.self) { try connection.query("DELETE FROM \(table)") }
        #expect(write.sqlstate == PostgresError.SQLState.readOnlySQLTransaction)
        try connection.rollback()
    }

    @Test("a write a read-only server refuses (a standby, a demoted primary) drops the connection as lost")
    func readOnlyServer() throws {
        // Transactions that are read-only without having asked to be, as every one on a standby is.
        let connection = try PostgresConnection(
            TestPostgres.configuration(),
            settings: TestPostgres.settings + [("transaction_read_only", "on")]
        )
        try connection.begin()
        let error = try #require(throws: PostgresError.self) {
            try connection.execute("CREATE TABLE read_only_server_test (x int)")
        }
        #expect(error.kind == .connectionLost && error.sqlstate == nil, "\(error)")
        #expect(error.message.contains("is read-only (a standby, or a demoted primary)"))
        #expect(connection.isBroken)
        #expect(error.storageError.code == .unavailable)
    }

    @Test("a unique violation names its constraint and table, never the value")
    func uniqueViolation() throws {
        let connection = try TestPostgres.connect()
        try connection.execute("CREATE TEMP TABLE unique_test (name text UNIQUE)")
        let insert = "INSERT INTO unique_test (name) VALUES ($1)"
        try connection.query(insert, [.text("value-that-is-secret")])
        let error = try #require(throws: PostgresError.self) {
            try connection.query(insert, [.text("value-that-is-secret")])
        }
        #expect(error.kind == .server)
        #expect(error.sqlstate == PostgresError.SQLState.uniqueViolation)
        #expect(error.constraint == "unique_test_name_key")
        #expect(error.table == "unique_test")
        #expect(!error.isRetryable)
        #expect(error.storageError.code == .uniqueViolation)
        #expect(error.storageError.constraint == nil, "not a constraint of the schema")
        #expect(error.storageError.message.contains("unique_test_name_key"))
        #expect(!error.description.contains("value-that-is-secret"), "\(error)")

        // A data exception's server text would quote the value: it is left out.
        let cast = try #require(throws: PostgresError.self) {
            try connection.query("SELECT $1::bigint", [.text("value-that-is-secret")])
        }
        #expect(cast.sqlstate == "22P02")
        #expect(!cast.description.contains("value-that-is-secret"), "\(cast)")
    }

    @Test("write skew under SERIALIZABLE: the second commit fails with 40001, retryable, and a retry succeeds")
    func serializationFailure() throws {
        let first = try TestPostgres.connect()
        let second = try TestPostgres.connect()
        let (table, drop) = try TestPostgres.makeTable(first)
        defer { drop() }
        // Each reads both rows and writes one: no serial order gives what both saw.
        for connection in [first, second] {
            try connection.begin(.serializable)
            #expect(try connection.query("SELECT sum(v) FROM \(table)") == [[.integer(0)]])
        }
        try first.query("UPDATE \(table) SET v = 1 WHERE id = $1", [.integer(1)])
        try second.query("UPDATE \(table) SET v = 1 WHERE id = $1", [.integer(2)])
        try first.commit()
        let error = try #require(throws: PostgresError.self) { try second.commit() }
        #expect(error.sqlstate == PostgresError.SQLState.serializationFailure, "\(error)")
        #expect(error.isRetryable)
        #expect(!error.isConnectionLost)
        #expect(error.storageError.code == .busy)
        #expect(second.transactionStatus == .idle)
        // The whole transaction again, now after the first: it sees the first's write.
        try second.transaction(.serializable) {
            #expect(try second.query("SELECT sum(v) FROM \(table)") == [[.integer(1)]])
            try second.query("UPDATE \(table) SET v = 1 WHERE id = $1", [.integer(2)])
        }
        #expect(try first.query("SELECT sum(v) FROM \(table)") == [[.integer(2)]])
    }

    @Test("a deadlock between two connections ends one of them with 40P01, retryable")
    func deadlock() throws {
        let configuration = try TestPostgres.configuration()
        let first = try TestPostgres.connect()
        let (table, drop) = try TestPostgres.makeTable(first)
        defer { drop() }
        try first.begin()
        try first.query("UPDATE \(table) SET v = v + 1 WHERE id = 1")

        let holdsRowTwo = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        let theirs = Shared<Result<Void, PostgresError>?>(nil)
        Thread {
            var outcome: Result<Void, PostgresError>
            do throws(PostgresError) {
                let second = try PostgresConnection(configuration, settings: TestPostgres.settings)
                try second.begin()
                try second.query("UPDATE \(table) SET v = v + 1 WHERE id = 2")
                holdsRowTwo.signal()
                // Waits for the first's row 1 while the first waits for row 2.
                outcome = Result { () throws(PostgresError) in _ = try second.query("UPDATE \(table) SET v = 0") }
                try? second.rollback()
            } catch {
                outcome = .failure(error)
                holdsRowTwo.signal()
            }
            theirs.value.withLock { $0 = outcome }
            finished.signal()
        }.start()

        try #require(holdsRowTwo.wait(timeout: .now() + 30) == .success)
        let mine = Result { () throws(PostgresError) in _ = try first.query("UPDATE \(table) SET v = 0") }
        // Whichever survived goes on once the victim is gone; rolling back lets the other finish.
        try? first.rollback()
        try #require(finished.wait(timeout: .now() + 60) == .success)
        let outcomes = [mine, try #require(theirs.value.withLock { $0 })]
        let failures = outcomes.compactMap { outcome -> PostgresError? in
            if case .failure(let error) = outcome { return error }
            return nil
        }
        #expect(failures.count == 1, "\(failures)")
        let error = try #require(failures.first)
        #expect(error.sqlstate == PostgresError.SQLState.deadlockDetected, "\(error)")
        #expect(error.isRetryable)
        #expect(error.storageError.code == .busy)
    }

    @Test("a terminated backend is reported as a lost connection; the pool replaces it and checks the others")
    func connectionLoss() throws {
        let configuration = try TestPostgres.configuration()
        let admin = try TestPostgres.connect()
        let pool = PostgresPool(configuration: configuration, maxConnections: 2, checkoutTimeout: 5)
        func backend() throws -> Int64 {
            try pool.withConnection { connection in
                let rows = try connection.query("SELECT pg_backend_pid()")
                guard case .integer(let pid) = rows.first?.first else { throw PostgresError(.misuse, "no pid") }
                return pid
            }
        }
        // Two connections open at once, both then idle.
        let pids = try pool.withConnection { outer in
            let inner = try backend()
            return [Int64(outer.backendPID), inner]
        }
        #expect(pool.openConnections == 2 && pool.idleConnections == 2)
        for pid in pids {
            // With a timeout, the call returns once the backend is gone.
            #expect(
                try admin.query("SELECT pg_terminate_backend($1::integer, 10000)", [.integer(pid)]) == [[.integer(1)]]
            )
        }

        let lost = try #require(throws: PostgresError.self) { try backend() }
        #expect(lost.isConnectionLost, "\(lost)")
        #expect(lost.kind == .connectionLost)
        #expect(!lost.isRetryable)
        #expect(lost.storageError.code == .unavailable)
        #expect(pool.openConnections == 1)

        // The other idle connection is dead too: checked on checkout, replaced, and the caller never knows.
        let fresh = try backend()
        #expect(!pids.contains(fresh))
        #expect(pool.openConnections == 1)
        #expect(try backend() == fresh)
    }

    @Test("an exhausted pool fails after its checkout timeout instead of waiting for ever")
    func poolTimeout() throws {
        let pool = PostgresPool(
            configuration: try TestPostgres.configuration(),
            maxConnections: 1,
            checkoutTimeout: 0.2
        )
        let error = try #require(throws: PostgresError.self) {
            try pool.withConnection { _ in try pool.withConnection { _ in } }
        }
        #expect(error.kind == .poolExhausted)
        #expect(error.storageError.code == .busy)
        #expect(pool.openConnections == 1 && pool.idleConnections == 1)
        #expect(try pool.withConnection { try $0.query("SELECT 1") } == [[.integer(1)]])
    }

    @Test("a connection left inside a transaction is rolled back when it comes back to the pool")
    func releaseRollsBack() throws {
        let pool = PostgresPool(configuration: try TestPostgres.configuration(), maxConnections: 1)
        let admin = try TestPostgres.connect()
        let (table, drop) = try TestPostgres.makeTable(admin)
        defer { drop() }
        try pool.withConnection { connection in
            try connection.begin()
            try connection.query("DELETE FROM \(table)")
        }
        #expect(try admin.query("SELECT count(*) FROM \(table)") == [[.integer(2)]])
        #expect(try pool.withConnection { $0.transactionStatus } == .idle)
    }

    @Test("a wrong password is one line naming the host and the cause, without any password")
    func wrongPassword() throws {
        var configuration = try TestPostgres.configuration()
        let real = configuration.password
        let wrong = "wrong-\(UUID().uuidString)"
        configuration.password = wrong
        let error = try #require(throws: PostgresError.self) { try PostgresConnection(configuration) }
        #expect(error.kind == .connectFailed)
        #expect(error.message.hasPrefix("cannot connect to PostgreSQL at \(configuration.endpoint): "), "\(error)")
        #expect(!error.message.contains("\n"))
        #expect(!error.description.contains(wrong))
        if let real { #expect(!error.description.contains(real)) }
        // Under password authentication (as Scripts/dev-postgres sets it up) the cause is named.
        if real != nil { #expect(error.message.contains("password authentication failed"), "\(error)") }
    }
}

@Suite("PostgreSQL connection errors (no server needed)")
struct PostgresErrorTests {
    static let password = "S3cr3t-PW"

    @Test("a literal doubles every quote byte, one before a combining mark too; redaction is byte for byte")
    func literalAndRedaction() {
        // Foundation's replacingOccurrences leaves the quote of "'\u{301}" single (it compares
        // grapheme clusters): that literal would end early.
        #expect(PostgresConnection.literal("a'\u{301}b") == "'a''\u{301}b'")
        #expect(PostgresConnection.literal("it's") == "'it''s'")
        #expect(PostgresConnection.literal("") == "''")
        let cause = "failed for \u{301}x\u{301}\0y and x\u{301}"
        #expect(
            PostgresConnection.replacingBytes("x\u{301}", with: "(redacted)", in: cause)
                == "failed for \u{301}(redacted)\0y and (redacted)"
        )
        #expect(PostgresConnection.replacingBytes("", with: "z", in: "abc") == "abc")
    }

    @Test("an unreachable server is one line naming host and cause, without the password")
    func unreachable() throws {
        let port = try RefusingPort()
        let configuration = PostgresConfiguration(
            host: "127.0.0.1",
            port: port.number,
            user: "u",
            password: Self.password,
            database: "d",
            connectTimeout: 2
        )
        let error = try #require(throws: PostgresError.self) { try PostgresConnection(configuration) }
        #expect(error.kind == .connectFailed)
        #expect(error.message == "cannot connect to PostgreSQL at 127.0.0.1:\(port.number): Connection refused")
        #expect(!error.description.contains(Self.password))
        #expect(error.storageError.code == .unavailable)
    }

    @Test("with several hosts, each is tried in order and the error names every one, without the password")
    func unreachableHosts() throws {
        let first = try RefusingPort()
        let second = try RefusingPort()
        let configuration = PostgresConfiguration(
            hosts: [.init("127.0.0.1", port: first.number), .init("127.0.0.1", port: second.number)],
            targetSessionAttributes: .readWrite,
            user: "u",
            password: Self.password,
            database: "d",
            connectTimeout: 2
        )
        let error = try #require(throws: PostgresError.self) { try PostgresConnection(configuration) }
        #expect(error.kind == .connectFailed)
        #expect(
            error.message
                == "cannot connect to PostgreSQL at any host: 127.0.0.1:\(first.number): Connection refused; "
                + "127.0.0.1:\(second.number): Connection refused"
        )
        #expect(!error.description.contains(Self.password))
        #expect(error.storageError.code == .unavailable)
    }

    @Test("a server that takes the connection but never answers fails at connect_timeout, as unavailable")
    func silentServer() throws {
        let port = try RefusingPort(listening: true)
        let configuration = PostgresConfiguration(
            host: "127.0.0.1",
            port: port.number,
            user: "u",
            password: Self.password,
            database: "d",
            connectTimeout: 2
        )
        let error = try #require(throws: PostgresError.self) { try PostgresConnection(configuration) }
        #expect(error.kind == .connectFailed)
        #expect(error.message.hasPrefix("cannot connect to PostgreSQL at 127.0.0.1:\(port.number): "), "\(error)")
        #expect(!error.description.contains(Self.password))
        #expect(error.storageError.code == .unavailable)
    }

    @Test("a lease that waits on a slot held by a slow connect fails as unavailable, not as a busy pool")
    func waitOnSlowConnect() async throws {
        let port = try RefusingPort(listening: true)
        let configuration = PostgresConfiguration(
            host: "127.0.0.1",
            port: port.number,
            user: "u",
            database: "d",
            connectTimeout: 2
        )
        let pool = PostgresPool(configuration: configuration, maxConnections: 1, checkoutTimeout: 0.3)
        // The one slot: a connect to a server that never answers, until connect_timeout.
        let slow = Task.detached { () -> PostgresError.Kind? in
            do {
                try pool.withConnection { _ in }
                return nil
            } catch {
                return (error as? PostgresError)?.kind
            }
        }
        for _ in 0..<100 where pool.openConnections == 0 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(pool.openConnections == 1)
        let waiting = try #require(throws: PostgresError.self) { try pool.lease() }
        #expect(waiting.kind == .connectFailed, "\(waiting)")
        #expect(waiting.storageError.code == .unavailable)
        #expect(await slow.value == .connectFailed)
        #expect(pool.openConnections == 0, "the failed connect gave its slot back")
    }

    @Test("SQLSTATEs map to the storage protocol's codes")
    func storageErrorMapping() {
        func mapped(_ sqlstate: String, constraint: String? = nil, table: String? = nil) -> StorageError {
            PostgresError(.server, "m", sqlstate: sqlstate, constraint: constraint, table: table).storageError
        }
        #expect(
            mapped("23505", constraint: "apple_links_sub_key", table: "apple_links").constraint == .appleLinksSub
        )
        #expect(
            mapped("23505", constraint: "transfer_records_old_sub_key", table: "transfer_records").constraint
                == .transferRecordsOldSub
        )
        #expect(mapped("23505", constraint: "accounts_pkey", table: "accounts").constraint == .accountsID)
        #expect(mapped("23505", constraint: "unknown_thing_key", table: "unknown").constraint == nil)
        #expect(mapped("23505").code == .uniqueViolation)
        #expect(mapped("23503").code == .constraint)
        for busy in ["40001", "40P01", "55P03", "57014", "53300"] { #expect(mapped(busy).code == .busy, "\(busy)") }
        for configuration in ["28P01", "28000", "3D000"] {
            #expect(mapped(configuration).code == .configuration, "\(configuration)")
        }
        #expect(mapped("42P01").code == .io)
        // The server shutting down, starting up, or a connection exception: try again when it is back.
        for unavailable in ["57P01", "57P02", "57P03", "08006", "08001"] {
            #expect(mapped(unavailable).code == .unavailable, "\(unavailable)")
        }
        #expect(PostgresError(.connectFailed, "m").storageError.code == .unavailable)
        #expect(PostgresError(.connectionLost, "m").storageError.code == .unavailable)
        #expect(PostgresError(.server, "m", sqlstate: "40P01").isRetryable)
        #expect(!PostgresError(.server, "m", sqlstate: "23505").isRetryable)
        #expect(PostgresError(.poolExhausted, "m").storageError.code == .busy)
    }

    @Test("libpq's multi-line messages become one line of distinct causes")
    func oneLine() {
        let message = """
            connection to server at "localhost" (::1), port 5432 failed: Connection refused
            \tIs the server running on that host and accepting TCP/IP connections?
            connection to server at "localhost" (127.0.0.1), port 5432 failed: Connection refused
            \tIs the server running on that host and accepting TCP/IP connections?

            """
        #expect(PostgresConnection.oneLine(message) == "Connection refused")
        let fatal =
            "connection to server at \"h\", port 1 failed: FATAL:  password authentication failed for user \"u\"\n"
        #expect(PostgresConnection.oneLine(fatal) == "password authentication failed for user \"u\"")
    }
}

/// A loopback TCP port that is bound but not listening: a connection to it is refused at once.
/// A loopback port nobody answers on: connections are refused, or with `listening` the kernel
/// takes them and nothing ever reads or writes (a server that hangs).
private final class RefusingPort: Sendable {
    let descriptor: Int32
    let number: Int

    init(listening: Bool = false) throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw PostgresError(.misuse, "cannot open a socket") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(descriptor, address, length) == 0 && getsockname(descriptor, address, &length) == 0
            }
        }
        guard bound, !listening || listen(descriptor, 16) == 0 else {
            close(descriptor)
            throw PostgresError(.misuse, "cannot bind a loopback port")
        }
        self.descriptor = descriptor
        number = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(descriptor) }
}
