/// When a SQLite commit is on disk (`sqlite:PATH?synchronous=...`, docs/architecture.md §8.2).
///
/// - `full` (the default): each commit syncs the write-ahead log before it returns, so a change
///   the client was told about (a conversion, a deleted password, a webhook event) survives a power
///   loss. It costs an `fsync` per commit.
/// - `normal`: the log is synced only at checkpoints. A crash of the process loses nothing, but a
///   power loss or a kernel crash can undo the commits since the last checkpoint, acknowledged ones
///   included: an account converted and told so may come back with its password, and its webhook
///   may already be out. For a disposable or development database, or storage that never loses
///   what it acknowledged (a battery-backed cache), where the commit rate matters more.
public enum SQLiteDurability: String, Sendable, CaseIterable {
    case full
    case normal

    /// The `PRAGMA synchronous` value.
    var pragma: String { rawValue.uppercased() }
}
