/// Where `UPGRADE_DB` points: `sqlite:PATH` (the default, `sqlite:upgrade.db`) or `postgres://...`.
public enum DatabaseLocation: Sendable, Equatable, CustomStringConvertible {
    case sqlite(path: String)
    case postgres(PostgresConfiguration)

    public static let defaultValue = "sqlite:upgrade.db"

    /// Messages here do not name the setting: the caller knows whether the value came from
    /// `UPGRADE_DB` or a `--db` flag, and prefixes it. A postgres URL is validated in full
    /// (`PostgresConfiguration.init(url:)`); messages never quote its password.
    public static func parse(_ text: String) throws(StorageError) -> DatabaseLocation {
        if text.hasPrefix("sqlite:") {
            let path = String(text.dropFirst("sqlite:".count))
            guard !path.isEmpty else {
                throw StorageError(.configuration, "'sqlite:' needs a file path, e.g. sqlite:upgrade.db")
            }
            return .sqlite(path: path)
        }
        if text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") {
            return .postgres(try PostgresConfiguration(url: text))
        }
        throw StorageError(.configuration, "expected sqlite:PATH or postgres://..., got a value with neither prefix")
    }

    /// Opens the store. PostgreSQL connects once here, so an unreachable host or a refused login
    /// fails at once, in one line naming the host and the cause (never the password).
    public func open() throws(StorageError) -> any UpgradeStore {
        switch self {
        case .sqlite(let path): return try SQLiteStore(path: path)
        case .postgres(let configuration): return try PostgresStore(configuration: configuration)
        }
    }

    /// Printable without credentials: a postgres URL shows `(redacted)` for its password.
    public var description: String {
        switch self {
        case .sqlite(let path): return "sqlite:\(path)"
        case .postgres(let configuration): return configuration.description
        }
    }
}
