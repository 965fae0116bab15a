import Foundation
import Synchronization
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// What only the SQLite backend has: its pragmas, the pages a write costs, the AUTOINCREMENT its
/// migration 4 removed, and its catalog. Everything the storage protocol promises is in
/// `StoreConformanceTests`.
@Suite("SQLite store")
struct SQLiteStoreTests {
    static let now: Int64 = 1_700_000_000

    func account(_ name: String) -> AccountRecord {
        AccountRecord(
            id: "acct-\(name)",
            username: name,
            credentialKind: .password,
            createdAt: Self.now,
            updatedAt: Self.now
        )
    }

    @Test("the database, its -wal and its -shm are created 0600 under a umask of 022; an existing file keeps its mode")
    func privateFiles() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-mode-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        func mode(_ path: String) throws -> Int? {
            try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        }
        let path = directory.appendingPathComponent("private.db").path
        let previous = umask(0o022)
        defer { umask(previous) }
        let store = try SQLiteStore(path: path)
        _ = try store.migrate(now: Self.now)
        try store.write { try $0.insertAccount(account("mode")) }
        for file in [path, path + "-wal", path + "-shm"] {
            #expect(FileManager.default.fileExists(atPath: file), "\(file) exists while the store is open")
            #expect(try mode(file) == 0o600, "\(file)")
        }

        // An operator's choice for an existing file stands (README, Operations).
        let shared = directory.appendingPathComponent("shared.db").path
        #expect(FileManager.default.createFile(atPath: shared, contents: nil, attributes: [.posixPermissions: 0o640]))
        _ = try SQLiteStore(path: shared)
        #expect(try mode(shared) == 0o640)
    }

    @Test("WAL mode and foreign keys are on")
    func pragmas() throws {
        let db = try Backend.sqlite.database()
        // Pragma queries count as statements that may write (`sqlite3_stmt_readonly`), so they are
        // read in a write transaction.
        let (mode, foreignKeys) = try db.store.write { tx in
            let connection = (tx as! SQLiteTransaction).connection
            return (
                try connection.query("PRAGMA journal_mode").first?.first,
                try connection.scalarInt("PRAGMA foreign_keys")
            )
        }
        #expect(mode == .text("wal"))
        #expect(foreignKeys == 1)
    }

    @Test("a write waits for the store's write in progress, not at SQLite's lock")
    func writersTakeTurns() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-turns-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // No busy timeout: a write that met another at SQLite's lock would fail at once.
        let store = try SQLiteStore(
            path: directory.appendingPathComponent("turns.db").path,
            maxConnections: 4,
            busyTimeoutMilliseconds: 0
        )
        _ = try store.migrate(now: Self.now)
        let inside = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        let outcomes = Mutex<[String]>([])
        Thread.detachNewThread {
            do {
                try store.write { tx in
                    try tx.insertAccount(self.account("first"))
                    outcomes.withLock { $0.append("first") }
                    inside.signal()
                    release.wait()
                }
            } catch {
                outcomes.withLock { $0.append("first failed: \(error)") }
            }
            finished.signal()
        }
        inside.wait()
        Thread.detachNewThread {
            do {
                try store.write { tx in
                    outcomes.withLock { $0.append("second") }
                    try tx.insertAccount(self.account("second"))
                }
            } catch {
                outcomes.withLock { $0.append("second failed: \(error)") }
            }
            finished.signal()
        }
        // Give the second write the time to meet the first (it would fail at once at SQLite's lock).
        let early = finished.wait(timeout: .now() + .milliseconds(300)) == .success
        release.signal()
        for _ in 0..<(early ? 1 : 2) { finished.wait() }
        #expect(outcomes.withLock { $0 } == ["first", "second"])
        #expect(try store.read { try $0.account(id: "acct-second") } != nil)
    }

    /// A store of its own in a temporary directory, and a write that adds about 30 pages to the log.
    func checkpointedStore() throws -> (
        store: SQLiteStore, wal: String, cleanup: () -> Void, write: @Sendable () throws -> Void
    ) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-wal-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("wal.db").path
        let store = try SQLiteStore(path: path)
        _ = try store.migrate(now: Self.now)
        let detail = ["padding": String(repeating: "x", count: 400)]
        let write: @Sendable () throws -> Void = {
            try store.write { tx in
                for index in 0..<200 {
                    try tx.appendAudit(
                        AuditEvent(at: Self.now, accountID: "a\(index)", upgradeID: nil, event: "bench", detail: detail)
                    )
                }
            }
        }
        return (store, path + "-wal", { try? FileManager.default.removeItem(at: directory) }, write)
    }

    @Test("a checkpoint copies the log while the store's other writes go on")
    func checkpointOutsideTheTurn() throws {
        let (store, _, cleanup, write) = try checkpointedStore()
        defer { cleanup() }
        // At the first checkpoint, another thread writes, and the checkpoint waits (at most 5 s) to
        // see it committed. (That write may itself wait for the checkpoint once it has committed,
        // when the log has grown to twice the threshold meanwhile: its commit is what counts.)
        let outcome = Mutex<String?>(nil)
        store.beforeCheckpoint = {
            guard outcome.withLock({ $0 == nil }) else { return }
            Thread.detachNewThread {
                do {
                    try store.write { tx in
                        try tx.appendAudit(
                            AuditEvent(at: Self.now, accountID: "meanwhile", upgradeID: nil, event: "meanwhile")
                        )
                    }
                } catch {
                    outcome.withLock { $0 = "failed: \(error)" }
                }
            }
            var committed = false
            for _ in 0..<5000 where !committed {
                committed = (try? store.read { try $0.auditTrail(accountID: "meanwhile", limit: 1) })?.isEmpty == false
                if !committed { usleep(1000) }
            }
            outcome.withLock { $0 = $0 ?? (committed ? "written" : "waited for the checkpoint") }
        }
        // Each write adds some 30 pages: the log reaches the threshold within 40 writes.
        for _ in 0..<60 where outcome.withLock({ $0 == nil }) { try write() }
        // The checkpoint runs on a thread of its own: wait (at most 10 s) for what it saw.
        for _ in 0..<10_000 where outcome.withLock({ $0 == nil }) { usleep(1000) }
        #expect(outcome.withLock { $0 } == "written")
    }

    @Test("the write that fills the log returns without waiting for the checkpoint")
    func checkpointDoesNotDelayTheWrite() throws {
        let (store, _, cleanup, write) = try checkpointedStore()
        defer { cleanup() }
        let started = Mutex(false)
        let writeReturned = DispatchSemaphore(value: 0)
        let sawReturn = Mutex<Bool?>(nil)
        store.beforeCheckpoint = {
            guard
                !started.withLock({ started in
                    defer { started = true }
                    return started
                })
            else { return }
            let returned = writeReturned.wait(timeout: .now() + 5) == .success
            sawReturn.withLock { $0 = returned }
        }
        for _ in 0..<60 {
            try write()
            if started.withLock({ $0 }) {
                writeReturned.signal()
                break
            }
        }
        #expect(started.withLock { $0 }, "the log reached the threshold")
        var answer: Bool?
        for _ in 0..<10_000 {
            answer = sawReturn.withLock { $0 }
            if answer != nil { break }
            usleep(1000)
        }
        #expect(answer == true, "the checkpoint began while the write that started it had already returned")
    }

    @Test("the log starts again from its beginning: with writers side by side it stays near the threshold")
    func logStaysBounded() throws {
        let (store, wal, cleanup, write) = try checkpointedStore()
        defer { cleanup() }
        // Four writers, 100 writes each, some 12,000 pages in all: more than twice the bound below.
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            for _ in 0..<100 {
                do {
                    try write()
                    _ = try store.read { try $0.auditTrail(accountID: "a1", limit: 1) }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int)
        // The restart length, what the writers add while a checkpoint runs, and one write's pages.
        let bound = Int(SQLiteStore.restartFrames + 2 * SQLiteStore.checkpointFrames)
        #expect(size < bound * (24 + 4096), "\(size) bytes")
    }

    /// WAL frames `write` adds: each committed page adds one (24 + 4096 bytes).
    func framesWritten(_ db: TestDatabase, _ write: (any StoreTransaction) throws -> Void) throws -> Int {
        let wal = String(try #require(db.url).dropFirst("sqlite:".count)) + "-wal"
        let size = { (try? FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int) ?? 0 }
        let before = size()
        try db.store.write(write)
        return (size() - before) / (24 + 4096)
    }

    @Test("an update rewrites an index's page only when a value that index holds changes")
    func updatesWriteChangedPagesOnly() throws {
        let db = try Backend.sqlite.database()
        let alice = account("alice")
        var link = AppleLinkRecord(
            accountID: alice.id,
            sub: "001.alice.1",
            teamID: "TEAMA12345",
            clientID: "com.example.app",
            email: nil,
            isPrivateEmail: nil,
            refreshTokenCiphertext: nil,
            status: .linked,
            linkedAt: Self.now,
            updatedAt: Self.now
        )
        var transfer = TransferRecord(
            accountID: alice.id,
            status: "pending",
            machine: "{}",
            oldSub: "001.old.1",
            transferSub: nil,
            newSub: nil,
            targetTeamID: "TEAMB12345",
            failureReason: nil,
            attempts: 0,
            windowEndsAt: nil,
            updatedAt: Self.now
        )
        var session = UpgradeSessionRecord(
            id: "upg_1",
            accountID: alice.id,
            usernameKey: "alice",
            serviceIdentifier: "example.com",
            status: "awaitingAppleCredential",
            machine: "{}",
            stateHash: "s",
            nonceHash: "n",
            linkedSub: nil,
            createdAt: Self.now,
            expiresAt: Self.now + 600,
            updatedAt: Self.now
        )
        try db.store.write { tx in
            try tx.insertAccount(alice)
            try tx.insertAppleLink(link)
            try tx.upsertTransferRecord(transfer, expectedVersion: nil)
            try tx.insertUpgradeSession(session)
        }
        link.email = "alice@privaterelay.appleid.com"
        #expect(try framesWritten(db) { try $0.updateAppleLink(link, expectedVersion: 1) } == 1, "same sub")
        link.sub = "001.alice.2"
        #expect(try framesWritten(db) { try $0.updateAppleLink(link, expectedVersion: 2) } == 2, "and the sub index")

        transfer.attempts = 1
        #expect(try framesWritten(db) { try $0.upsertTransferRecord(transfer, expectedVersion: 1) } == 1)
        transfer.status = "prepared"
        transfer.transferSub = "001.transfer.1"
        #expect(
            try framesWritten(db) { try $0.upsertTransferRecord(transfer, expectedVersion: 2) } == 3,
            "and the status and transfer-sub indexes"
        )

        // What was fixed at insert (account, username, creation) is not written again; the ended
        // session leaves the index of open sessions (migration 24) and, completed, enters that of
        // completed ones (migration 25).
        session.accountID = nil
        session.usernameKey = "mallory"
        session.createdAt = 0
        session.status = "completed"
        session.nonceHash = nil
        session.linkedSub = "001234.abc"
        #expect(
            try framesWritten(db) { try $0.updateUpgradeSession(session, expectedVersion: 1) } == 3,
            "and the open- and completed-sessions indexes"
        )
    }

    @Test("after migration 4 the audit table takes its ids without AUTOINCREMENT")
    func auditWithoutAutoincrement() throws {
        let db = try Backend.sqlite.database()
        let sql = try db.store.write { tx in
            try TestDatabase.raw(tx, "SELECT sql FROM sqlite_master WHERE name = 'audit_events'")
        }
        #expect(sql.first?.first.flatMap(\.string)?.contains("AUTOINCREMENT") == false)
    }

    @Test("a deletion finds what to erase through indexes, never by reading the audit trail or every upgrade")
    func erasureReadsIndexes() throws {
        let db = try Backend.sqlite.database()
        let plans = try db.store.read { tx in
            try [
                (AuditSQL.selectNamingPersonalData[.sqlite], [SQLValue.text("a"), .text(#"["001.a"]"#)]),
                ("SELECT id FROM upgrade_sessions WHERE account_id IS NULL AND username_key = ?", [.text("a")]),
                ("SELECT id FROM password_changes WHERE account_id IS NULL AND username_key = ?", [.text("a")]),
            ].map { sql, arguments in
                try TestDatabase.raw(tx, "EXPLAIN QUERY PLAN " + sql, arguments).compactMap { $0.last?.string }
                    .joined(separator: "\n")
            }
        }
        #expect(
            plans[0].contains("USING INDEX audit_events_account") && plans[0].contains("USING INDEX audit_events_sub")
        )
        #expect(!plans[0].contains("SCAN audit_events"), "\(plans[0])")
        #expect(plans[1].contains("USING INDEX upgrade_sessions_accountless"), "\(plans[1])")
        #expect(plans[2].contains("USING INDEX password_changes_accountless"), "\(plans[2])")
    }

    @Test("every UNIQUE and PRIMARY KEY constraint of the schema has exactly one typed value, and a collision above")
    func everyUniqueConstraintIsMapped() throws {
        let db = try Backend.sqlite.database()
        // The columns of each unique index, named as SQLite's messages name them; pragma functions
        // count as statements that may write, so they run in a write transaction.
        let named = try db.store.write { tx in
            let connection = (tx as! SQLiteTransaction).connection
            var columns: [String: [String]] = [:]
            for row in try connection.query(
                """
                SELECT m.name, l.name, i.name FROM sqlite_master AS m
                JOIN pragma_index_list(m.name) AS l JOIN pragma_index_info(l.name) AS i
                WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND m.name != 'schema_migrations'
                    AND l."unique" = 1
                ORDER BY m.name, l.name, i.seqno
                """
            ) {
                let table = row[0].string ?? ""
                columns[row[1].string ?? "", default: []].append("\(table).\(row[2].string ?? "")")
            }
            var named = Set(columns.values.map { $0.joined(separator: ", ") })
            // An INTEGER PRIMARY KEY is the rowid itself and has no index.
            for row in try connection.query(
                """
                SELECT m.name, c.name FROM sqlite_master AS m JOIN pragma_table_info(m.name) AS c
                WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND m.name != 'schema_migrations'
                    AND c.pk = 1 AND upper(c.type) = 'INTEGER'
                    AND NOT EXISTS (SELECT 1 FROM pragma_index_list(m.name) AS l WHERE l.origin = 'pk')
                """
            ) {
                named.insert("\(row[0].string ?? "").\(row[1].string ?? "")")
            }
            return named
        }
        #expect(named == Set(SQLiteConnection.uniqueConstraints.keys))
        let values = SQLiteConnection.uniqueConstraints.values
        #expect(Set(values).count == values.count, "one typed value per constraint")
        #expect(Set(UniqueCollision.allCases.map(\.constraint)) == Set(values))
    }

    @Test("a commit is synced before it returns by default (synchronous FULL); NORMAL only when asked")
    func durability() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("durability-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        for (location, expected) in [
            ("sqlite:\(directory.path)/a.db", 2), ("sqlite:\(directory.path)/b.db?synchronous=normal", 1),
        ] {
            let store = try #require(try DatabaseLocation.parse(location).open() as? SQLiteStore)
            // A pragma query counts as a statement that may write: read in a write transaction.
            let level = try store.write { tx in
                try (tx as! SQLiteTransaction).connection.scalarInt("PRAGMA synchronous")
            }
            #expect(level == Int64(expected), "\(location)")
        }
    }

    @Test("UPGRADE_DB parsing")
    func databaseLocation() throws {
        #expect(try DatabaseLocation.parse("sqlite:upgrade.db") == .sqlite(path: "upgrade.db", durability: .full))
        #expect(
            try DatabaseLocation.parse("sqlite:/var/lib/u.db?synchronous=normal")
                == .sqlite(path: "/var/lib/u.db", durability: .normal)
        )
        #expect(try DatabaseLocation.parse("sqlite:u.db?synchronous=full") == .sqlite(path: "u.db", durability: .full))
        #expect(
            String(describing: try DatabaseLocation.parse("sqlite:u.db?synchronous=normal"))
                == "sqlite:u.db?synchronous=normal"
        )
        #expect(String(describing: try DatabaseLocation.parse("sqlite:u.db")) == "sqlite:u.db")
        for refused in ["sqlite:", "sqlite:?synchronous=full", "sqlite:u.db?synchronous=off", "sqlite:u.db?mode=ro"] {
            #expect(throws: StorageError.self, "\(refused)") { try DatabaseLocation.parse(refused) }
        }
        #expect(throws: StorageError.self) { try DatabaseLocation.parse("mysql://x") }
        #expect(!String(describing: try DatabaseLocation.parse("postgres://u:secretpw@h/db")).contains("secretpw"))
    }
}
