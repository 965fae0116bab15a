import Foundation

/// Where `UPGRADE_DB` points: `sqlite:PATH` (the default, `sqlite:upgrade.db`; `?synchronous=normal`
/// trades durability against power loss for commit rate: `SQLiteDurability`) or `postgres://...`.
public enum DatabaseLocation: Sendable, Equatable, CustomStringConvertible {
    case sqlite(path: String, durability: SQLiteDurability = .full)
    case postgres(PostgresConfiguration)

    /// Where `UPGRADE_DB` points when it is not set.
    public static let `default` = DatabaseLocation.sqlite(path: "upgrade.db")
    /// The default of `serve --dev` and of the commands given `--dev`: development data and the
    /// published development key stay out of the production default.
    public static let development = DatabaseLocation.sqlite(path: "siwa-dev.db")

    /// Messages here do not name the setting: the caller knows whether the value came from
    /// `UPGRADE_DB` or a `--db` flag, and prefixes it. A postgres URL is validated in full
    /// (`PostgresConfiguration.init(url:)`); messages never quote its password.
    public static func parse(_ text: String) throws(StorageError) -> DatabaseLocation {
        if text.hasPrefix("sqlite:") {
            var path = Substring(text.dropFirst("sqlite:".count))
            var durability = SQLiteDurability.full
            if let question = path.lastIndex(of: "?") {
                let query = path[path.index(after: question)...]
                path = path[..<question]
                guard query.hasPrefix("synchronous="),
                    let chosen = SQLiteDurability(rawValue: String(query.dropFirst("synchronous=".count)))
                else {
                    throw StorageError(
                        .configuration,
                        "a sqlite: path takes one parameter, ?synchronous=full (the default) or ?synchronous=normal"
                    )
                }
                durability = chosen
            }
            guard !path.isEmpty else {
                throw StorageError(.configuration, "'sqlite:' needs a file path, e.g. sqlite:upgrade.db")
            }
            return .sqlite(path: String(path), durability: durability)
        }
        if text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") {
            return .postgres(try PostgresConfiguration(url: text))
        }
        throw StorageError(.configuration, "expected sqlite:PATH or postgres://..., got a value with neither prefix")
    }

    /// Opens the store. PostgreSQL connects once here, so an unreachable host or a refused login
    /// fails at once, in one line naming the host and the cause (never the password).
    /// `outageWaitSeconds` is how long each PostgreSQL transaction then waits for an unreachable
    /// server (`PostgresStore.Limits.outageWaitSeconds`): zero on a request path, more for batch jobs.
    public func open(outageWaitSeconds: Double = 0) throws(StorageError) -> any UpgradeStore {
        switch self {
        case .sqlite(let path, let durability): return try SQLiteStore(path: path, durability: durability)
        case .postgres(let configuration):
            var limits = PostgresStore.Limits()
            limits.outageWaitSeconds = outageWaitSeconds
            return try PostgresStore(configuration: configuration, limits: limits)
        }
    }

    /// An SQLite file that is not there: opening would create an empty database. Only `db migrate`
    /// and `serve --dev` may; everything else refuses such a path (README, Command line).
    public var isMissingFile: Bool {
        guard case .sqlite(let path, _) = self else { return false }
        return !FileManager.default.fileExists(atPath: path)
    }

    /// Printable without credentials: a postgres URL shows `(redacted)` for its password.
    public var description: String {
        switch self {
        case .sqlite(let path, .full): return "sqlite:\(path)"
        case .sqlite(let path, let durability): return "sqlite:\(path)?synchronous=\(durability.rawValue)"
        case .postgres(let configuration): return configuration.description
        }
    }
}
