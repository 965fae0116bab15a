import Foundation
import Synchronization

/// The embedded backend: one SQLite file in WAL mode with foreign keys on.
///
/// Connections are pooled; each is used by one thread at a time (checked out under `lock`), which is
/// the invariant that makes this class `@unchecked Sendable` and the connections' NOMUTEX mode safe.
/// Writers use `BEGIN IMMEDIATE`, so two writers serialise on SQLite's lock (waiting up to the busy
/// timeout) instead of failing halfway; readers see WAL snapshots and never block writers. The
/// writers of one store take turns before that (`writerTurn`): SQLite's busy handler sleeps 1, 2,
/// 5, 10 ms and more between tries, so two writers of one process that met on SQLite's lock lost
/// milliseconds for a write of a tenth of one. Writers in other processes still meet on SQLite's lock.
public final class SQLiteStore: UpgradeStore, @unchecked Sendable {
    public let path: String
    public let durability: SQLiteDurability
    private let maxConnections: Int
    private let busyTimeoutMilliseconds: Int32
    private let condition = NSCondition()
    private var idle: [SQLiteConnection] = []
    private var open = 0
    /// Guards `writing`: whether one of this store's writes is under way.
    private let writerTurn = NSCondition()
    private var writing = false

    /// How long a write waits for the writes of this process before it: SQLite's busy timeout.
    static let writerTurnTimeout: TimeInterval = 5

    /// Opens (creating if needed) the database file. The schema is not touched: call `migrate`.
    public convenience init(
        path: String,
        maxConnections: Int = 8,
        durability: SQLiteDurability = .full
    ) throws(StorageError) {
        try self.init(
            path: path,
            maxConnections: maxConnections,
            busyTimeoutMilliseconds: 5000,
            durability: durability
        )
    }

    /// `busyTimeoutMilliseconds`: how long a statement waits for another process's lock.
    init(
        path: String,
        maxConnections: Int,
        busyTimeoutMilliseconds: Int32,
        durability: SQLiteDurability = .full
    ) throws(StorageError) {
        guard !path.isEmpty else { throw StorageError(.configuration, "the SQLite path is empty") }
        self.path = path
        self.durability = durability
        self.maxConnections = max(1, maxConnections)
        self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
        // Open one connection now so a bad path fails at start-up, not on the first request.
        let first = try SQLiteConnection(
            path: path,
            busyTimeoutMilliseconds: busyTimeoutMilliseconds,
            durability: durability
        )
        idle.append(first)
        open = 1
    }

    private func checkout() throws(StorageError) -> SQLiteConnection {
        condition.lock()
        while idle.isEmpty && open >= maxConnections {
            condition.wait()
        }
        if let connection = idle.popLast() {
            condition.unlock()
            return connection
        }
        open += 1
        condition.unlock()
        do {
            return try SQLiteConnection(
                path: path,
                busyTimeoutMilliseconds: busyTimeoutMilliseconds,
                durability: durability
            )
        } catch {
            condition.lock()
            open -= 1
            condition.signal()
            condition.unlock()
            throw error
        }
    }

    private func checkin(_ connection: SQLiteConnection) {
        condition.lock()
        idle.append(connection)
        condition.signal()
        condition.unlock()
    }

    private func withConnection<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        let connection = try checkout()
        defer { checkin(connection) }
        return try body(connection)
    }

    public func write<T>(_ body: (any StoreTransaction) throws -> T) throws -> T {
        let (result, walFrames) = try writeInTurn(body)
        if walFrames >= Self.restartFrames + Self.checkpointFrames {
            checkpointBeforeGoingOn()
        } else if walFrames >= nextCheckpoint.load(ordering: .relaxed) {
            startCheckpoint()
        }
        return result
    }

    /// A checkpoint starts each time the log has grown by this many frames, SQLite's default.
    static let checkpointFrames: Int32 = 1000
    /// Once the log has this many frames, a checkpoint also copies, in a turn of its own, what the
    /// writes added during its copy, so that the next write starts the log again from its beginning.
    static let restartFrames: Int32 = 3 * checkpointFrames

    /// The log's length at which the next checkpoint starts.
    private let nextCheckpoint = Atomic<Int32>(SQLiteStore.checkpointFrames)

    /// Whether a checkpoint of this store is under way: one at a time. `checkpointEnded` is
    /// signalled as one ends.
    private let checkpointing = Atomic<Bool>(false)
    private let checkpointEnded = NSCondition()

    /// Called as a checkpoint starts, outside the turn (tests).
    var beforeCheckpoint: (@Sendable () -> Void)?

    /// Starts a checkpoint on a thread of its own, unless one is under way: the write that filled
    /// the log returns without waiting for the copy and its fsyncs, so a writer that others wait
    /// for (a batch's group commit, a request) never carries a checkpoint's latency.
    private func startCheckpoint() {
        guard checkpointing.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else {
            return
        }
        // A thread of its own, not a dispatch queue's: those are shared with Swift's cooperative
        // threads and as few as the cores, so a checkpoint queued there waited for busy writers.
        Thread.detachNewThread { [self] in
            checkpoint()
            endCheckpoint()
        }
    }

    /// The log passed the restart length by a checkpoint's worth: the checkpoints lag behind the
    /// writes. This writer checkpoints itself, or waits for the one under way to end, so that the
    /// log stays bounded however fast the writes come.
    private func checkpointBeforeGoingOn() {
        if checkpointing.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged {
            checkpoint()
            endCheckpoint()
            return
        }
        let deadline = Date(timeIntervalSinceNow: Self.writerTurnTimeout)
        checkpointEnded.lock()
        defer { checkpointEnded.unlock() }
        while checkpointing.load(ordering: .acquiring) {
            guard checkpointEnded.wait(until: deadline) else { return }
        }
    }

    private func endCheckpoint() {
        checkpointEnded.lock()
        checkpointing.store(false, ordering: .releasing)
        checkpointEnded.broadcast()
        checkpointEnded.unlock()
    }

    /// SQLite checkpoints at the end of the COMMIT that filled the log, while this store's other
    /// writes wait their turn: the copy and its two fsyncs were half of a batch's time in turns.
    /// Here the log is copied outside the turn while writes go on. The log only starts again from
    /// its beginning when a write finds it copied whole, which never happens while writes follow
    /// one another; so once it reaches `restartFrames`, what was committed during the copy is
    /// copied too, in a turn of its own (a pause of a few milliseconds for the store's writes).
    private func checkpoint() {
        beforeCheckpoint?()
        let length = (try? withConnection { $0.checkpoint() }) ?? 0
        guard length >= Self.restartFrames else {
            nextCheckpoint.store(length + Self.checkpointFrames, ordering: .relaxed)
            return
        }
        nextCheckpoint.store(Self.checkpointFrames, ordering: .relaxed)
        do {
            try takeWriterTurn()
        } catch {
            return
        }
        defer { releaseWriterTurn() }
        _ = try? withConnection { $0.checkpoint() }
    }

    /// The write, and the frames the log has after it.
    private func writeInTurn<T>(_ body: (any StoreTransaction) throws -> T) throws -> (T, Int32) {
        // The turn is taken before a connection, so that waiting writers leave connections to readers.
        try takeWriterTurn()
        defer { releaseWriterTurn() }
        return try withConnection { connection in
            try connection.control("BEGIN IMMEDIATE")
            do {
                let result = try body(SQLiteTransaction(connection: connection))
                connection.walFrames = 0
                try connection.control("COMMIT")
                return (result, connection.walFrames)
            } catch {
                // The first error wins; a failed rollback (e.g. after SQLite already rolled back) is not news.
                try? connection.control("ROLLBACK")
                throw error
            }
        }
    }

    private func takeWriterTurn() throws(StorageError) {
        let deadline = Date(timeIntervalSinceNow: Self.writerTurnTimeout)
        writerTurn.lock()
        defer { writerTurn.unlock() }
        while writing {
            guard writerTurn.wait(until: deadline) || !writing else {
                throw StorageError(
                    .busy,
                    "database is busy: other writes of this process held it for \(Int(Self.writerTurnTimeout)) s"
                )
            }
        }
        writing = true
    }

    private func releaseWriterTurn() {
        writerTurn.lock()
        writing = false
        writerTurn.signal()
        writerTurn.unlock()
    }

    public func read<T>(_ body: (any StoreTransaction) throws -> T) throws -> T {
        try withConnection { connection in
            try connection.control("BEGIN")
            connection.readOnly = true
            defer {
                connection.readOnly = false
                try? connection.control("ROLLBACK")
            }
            return try body(SQLiteTransaction(connection: connection))
        }
    }

    public func ping() throws(StorageError) {
        do {
            try withConnection { connection in _ = try connection.scalarInt("SELECT 1") }
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError(.io, "\(error)")
        }
    }

    public func migrate(now: Int64) throws(StorageError) -> [MigrationStatus] {
        try migrate(now: now, through: nil)
    }

    /// Applies pending migrations up to and including `version` (all of them when nil); tests use
    /// it to build a database as an older binary left it. `BEGIN IMMEDIATE` lets one process at a time migrate.
    func migrate(now: Int64, through version: Int?) throws(StorageError) -> [MigrationStatus] {
        do {
            return try withConnection { connection in
                try connection.execute("BEGIN IMMEDIATE")
                do {
                    try connection.execute(
                        """
                        CREATE TABLE IF NOT EXISTS schema_migrations (
                            version INTEGER PRIMARY KEY, name TEXT NOT NULL, checksum TEXT NOT NULL, applied_at INTEGER NOT NULL)
                        """
                    )
                    let applied = try SchemaMigrator.sqlite.migrate(
                        SQLiteTransaction(connection: connection),
                        through: version,
                        now: now
                    ) { try connection.execute($0) }
                    try connection.execute("COMMIT")
                    return applied
                } catch {
                    try? connection.execute("ROLLBACK")
                    throw error
                }
            }
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError(.migration, "\(error)")
        }
    }

    public func migrationStatus() throws(StorageError) -> [MigrationStatus] {
        do {
            return try withConnection { try SchemaMigrator.sqlite.status(SQLiteTransaction(connection: $0)) }
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError(.migration, "\(error)")
        }
    }
}

extension SQLValue {
    var int: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    var string: String? {
        if case .text(let value) = self { return value }
        return nil
    }

    var bytes: [UInt8]? {
        if case .blob(let value) = self { return value }
        return nil
    }

    init(_ value: String?) { self = value.map { .text($0) } ?? .null }
    init(_ value: Int64?) { self = value.map { .integer($0) } ?? .null }
    init(_ value: [UInt8]?) { self = value.map { .blob($0) } ?? .null }
    init(_ value: Bool?) { self = value.map { .integer($0 ? 1 : 0) } ?? .null }
}
