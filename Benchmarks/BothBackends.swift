import Foundation
import UpgradeEngine

/// The arguments of a benchmark that runs on SQLite and, given a database, on PostgreSQL:
/// up to `maxNumbers` positive counts and `--db postgres://...` (default `UPGRADE_DB`). Nil, after
/// one line naming the fault, when they do not parse (the caller exits 2).
func bothBackendsArguments(
    _ arguments: [String],
    command: String,
    maxNumbers: Int,
    usage: String
) -> (numbers: [Int], database: String?)? {
    var options = arguments
    var database = ProcessInfo.processInfo.environment["UPGRADE_DB"]
    if let flag = options.firstIndex(of: "--db") {
        guard flag + 1 < options.count else {
            print("\(command): --db needs a postgres://... URL")
            return nil
        }
        database = options[flag + 1]
        options.removeSubrange(flag...(flag + 1))
    }
    let numbers = options.compactMap { Int($0) }.filter { $0 > 0 }
    guard numbers.count == options.count, numbers.count <= maxNumbers else {
        print("usage: \(usage)")
        return nil
    }
    return (numbers, database)
}

/// Runs `body` on a fresh SQLite store in a temporary directory (removed afterwards), then, when
/// `database` is given, on the PostgreSQL database it names; both migrated first.
func onBothBackends(
    _ name: String,
    database: String?,
    _ body: (_ store: any UpgradeStore, _ backend: String) throws -> Void
) throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-\(name)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let sqlite = try SQLiteStore(path: directory.appendingPathComponent("\(name).db").path)
    _ = try sqlite.migrate(now: Int64(Date().timeIntervalSince1970))
    try body(sqlite, "SQLite")

    guard let database else {
        print("PostgreSQL: skipped (give --db postgres://... or set UPGRADE_DB)")
        return
    }
    guard case .postgres(let configuration) = try DatabaseLocation.parse(database) else {
        throw BenchmarkError("--db must name a PostgreSQL database (postgres://...)")
    }
    let postgres = try PostgresStore(configuration: configuration)
    _ = try postgres.migrate(now: Int64(Date().timeIntervalSince1970))
    try body(postgres, "PostgreSQL")
}
