/// Where `UPGRADE_DB` points: `sqlite:PATH` (the default, `sqlite:upgrade.db`) or `postgres://...`.
public enum DatabaseLocation: Sendable, Equatable, CustomStringConvertible {
    case sqlite(path: String)
    case postgres(url: String)

    public static let defaultValue = "sqlite:upgrade.db"

    public static func parse(_ text: String) throws(StorageError) -> DatabaseLocation {
        if text.hasPrefix("sqlite:") {
            let path = String(text.dropFirst("sqlite:".count))
            guard !path.isEmpty else {
                throw StorageError(.configuration, "UPGRADE_DB: 'sqlite:' needs a file path, e.g. sqlite:upgrade.db")
            }
            return .sqlite(path: path)
        }
        if text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") {
            return .postgres(url: text)
        }
        throw StorageError(
            .configuration,
            "UPGRADE_DB: expected sqlite:PATH or postgres://..., got a value with neither prefix"
        )
    }

    /// Opens the store. PostgreSQL is part of the design but not built yet: it is refused clearly.
    public func open() throws(StorageError) -> any UpgradeStore {
        switch self {
        case .sqlite(let path):
            return try SQLiteStore(path: path)
        case .postgres:
            throw StorageError(
                .configuration,
                "UPGRADE_DB: the PostgreSQL backend is not available in this build; use sqlite:PATH"
            )
        }
    }

    /// Printable without credentials (a postgres URL may carry a password).
    public var description: String {
        switch self {
        case .sqlite(let path): return "sqlite:\(path)"
        case .postgres: return "postgres://(redacted)"
        }
    }
}
