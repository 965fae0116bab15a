import Foundation
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

extension Backend {
    /// The migrations the binary carries for this backend.
    var migrations: [SchemaMigration] {
        switch self {
        case .sqlite: EmbeddedSchema.sqlite
        case .postgres: EmbeddedSchema.postgres
        }
    }

    /// A fresh database of its own: a file in a temporary directory, or a schema of its own on the
    /// test cluster (the store's sessions get it as `search_path`). Removed when released. For a
    /// process started with the database's `url` (the CLI, a server), PostgreSQL needs a whole
    /// database: `forProcesses`.
    func database(migrated: Bool = true, forProcesses: Bool = false) throws -> TestDatabase {
        let database = try TestDatabase(self, forProcesses: forProcesses)
        if migrated { _ = try database.store.migrate(now: 1_700_000_000) }
        return database
    }
}

/// One backend's fresh database, and the few things a test needs below the storage protocol.
final class TestDatabase: Sendable {
    let backend: Backend
    /// The database's store. It keeps the database alive: a test may hold the store alone.
    let store: any UpgradeStore
    private let place: Place

    /// Where the database lives, removed when the last store on it is released.
    private final class Place: Sendable {
        /// SQLite: the directory of the database file.
        let directory: URL?
        /// PostgreSQL: the schema that holds the database's tables, in the cluster's database.
        let schema: String?
        /// PostgreSQL: a database of its own instead.
        let database: String?

        init(directory: URL? = nil, schema: String? = nil, database: String? = nil) {
            self.directory = directory
            self.schema = schema
            self.database = database
        }

        deinit {
            if let directory { try? FileManager.default.removeItem(at: directory) }
            if let schema { try? TestPostgres.connect().execute("DROP SCHEMA IF EXISTS \(schema) CASCADE") }
            if let database { try? TestPostgres.connect().execute("DROP DATABASE IF EXISTS \(database) WITH (FORCE)") }
        }
    }

    /// A store that keeps its database's place alive.
    private struct Held: UpgradeStore {
        let base: any UpgradeStore
        let place: Place

        func migrate(now: Int64) throws(StorageError) -> [MigrationStatus] { try base.migrate(now: now) }
        func migrationStatus() throws(StorageError) -> [MigrationStatus] { try base.migrationStatus() }
        func write<T>(_ body: (any StoreTransaction) throws -> T) throws -> T { try base.write(body) }
        func read<T>(_ body: (any StoreTransaction) throws -> T) throws -> T { try base.read(body) }
        func ping() throws(StorageError) { try base.ping() }
    }

    init(_ backend: Backend, forProcesses: Bool = false) throws {
        self.backend = backend
        let name = "test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
        switch backend {
        case .sqlite:
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "siwa-test-\(UUID().uuidString)"
            )
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            // Which test made it: a directory left behind (a store kept alive past its test) says so.
            let maker = Test.current.map { "\($0.id)\n" } ?? "(outside a test)\n"
            try Data(maker.utf8).write(to: directory.appendingPathComponent("made-by.txt"))
            place = Place(directory: directory)
        case .postgres where forProcesses:
            try TestPostgres.connect().execute("CREATE DATABASE \(name)")
            place = Place(database: name)
        case .postgres:
            try TestPostgres.connect().execute("CREATE SCHEMA \(name)")
            place = Place(schema: name)
        }
        store = Held(base: try Self.open(place, maxConnections: 8), place: place)
    }

    private static func open(_ place: Place, maxConnections: Int) throws -> any UpgradeStore {
        if let directory = place.directory {
            return try SQLiteStore(
                path: directory.appendingPathComponent("upgrade.db").path,
                maxConnections: maxConnections
            )
        }
        var limits = PostgresStore.Limits()
        limits.maxConnections = maxConnections
        return try openPostgres(place, limits)
    }

    private static func openPostgres(
        _ place: Place,
        _ limits: PostgresStore.Limits,
        preparedStatements: Bool = false,
        through pooler: TestPgBouncer? = nil
    ) throws -> PostgresStore {
        var configuration = try TestPostgres.configuration()
        configuration.preparedStatements = preparedStatements
        if let pooler {
            configuration.host = pooler.configuration.host
            configuration.port = pooler.configuration.port
        }
        if let database = place.database { configuration.database = database }
        return try PostgresStore(
            configuration: configuration,
            limits: limits,
            extraSettings: place.schema.map { [("search_path", $0)] } ?? []
        )
    }

    /// PostgreSQL: the store itself, for what only it offers (the traffic it counts).
    var postgresStore: PostgresStore? { (store as? Held)?.base as? PostgresStore }

    /// PostgreSQL: the schema that holds this database's tables, unless it has a database of its own.
    var schema: String? { place.schema }

    /// SQLite: the database file; its `-wal` and `-shm` files sit beside it.
    var path: String? { place.directory?.appendingPathComponent("upgrade.db").path }

    /// `UPGRADE_DB` for a process to open this database: nil for a PostgreSQL schema.
    var url: String? {
        if let directory = place.directory { return "sqlite:" + directory.appendingPathComponent("upgrade.db").path }
        return place.database.flatMap { try? TestPostgres.url(database: $0) }
    }

    /// Another store on the same database, as a second process would open it.
    func reopen(maxConnections: Int = 8) throws -> any UpgradeStore {
        Held(base: try Self.open(place, maxConnections: maxConnections), place: place)
    }

    /// Another PostgreSQL store on the same database, with other limits.
    func reopenPostgres(_ limits: PostgresStore.Limits) throws -> any UpgradeStore {
        Held(base: try Self.openPostgres(place, limits), place: place)
    }

    /// Another PostgreSQL store on the same database, whose connections prepare named statements
    /// (`prepared_statements=on`) or go through a pooler. The test keeps this database alive while
    /// it uses the store.
    func openPostgresStore(
        preparedStatements: Bool = false,
        through pooler: TestPgBouncer? = nil
    ) throws
        -> PostgresStore
    {
        try Self.openPostgres(place, PostgresStore.Limits(), preparedStatements: preparedStatements, through: pooler)
    }

    /// Applies pending migrations up to and including `version`, as an older binary would have.
    func migrate(through version: Int, now: Int64 = 1_700_000_000) throws -> [MigrationStatus] {
        switch (store as? Held)?.base {
        case let sqlite as SQLiteStore: return try sqlite.migrate(now: now, through: version)
        case let postgres as PostgresStore: return try postgres.migrate(now: now, through: version)
        default: throw StorageError(.configuration, "unknown store")
        }
    }

    /// Runs SQL no protocol method offers on the transaction's own connection. Written with `?`
    /// placeholders, as SQLite takes them; numbered (`$1`, `$2`, ...) for PostgreSQL.
    @discardableResult
    static func raw(_ tx: any StoreTransaction, _ sql: String, _ arguments: [SQLValue] = []) throws -> [[SQLValue]] {
        switch tx {
        case let sqlite as SQLiteTransaction: return try sqlite.connection.query(sql, arguments)
        case let postgres as PostgresTransaction: return try postgres.rows(numbered(sql), arguments)
        default: throw StorageError(.configuration, "unknown transaction")
        }
    }

    /// `?` placeholders as `$1`, `$2`, ...; a `?` inside a quoted literal stays as it is.
    static func numbered(_ sql: String) -> String {
        var result = ""
        var index = 0
        var quoted = false
        for character in sql {
            if character == "'" { quoted.toggle() }
            if character == "?" && !quoted {
                index += 1
                result += "$\(index)"
            } else {
                result.append(character)
            }
        }
        return result
    }
}
