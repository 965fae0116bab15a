import Synchronization

/// What a `PostgresStore`'s connections sent, added up since it opened: what the benchmarks report
/// per upgrade and a test bounds.
public struct PostgresTraffic: Sendable, Equatable, CustomStringConvertible {
    /// Times a connection sent requests and waited for their answers; commands pipelined together
    /// share one. A ROLLBACK sent without waiting adds none.
    public var roundTrips = 0
    /// SQL commands sent: statements, transaction control (BEGIN and its settings, COMMIT, ROLLBACK),
    /// simple queries.
    public var statements = 0
    /// Statements prepared, each once per connection, sent with their first execution: only with
    /// `prepared_statements=on`; unnamed statements (the default) count none.
    public var prepares = 0
    /// Transactions committed.
    public var commits = 0

    public init() {}

    /// What was sent between two readings.
    public static func - (later: Self, earlier: Self) -> Self {
        var difference = Self()
        difference.roundTrips = later.roundTrips - earlier.roundTrips
        difference.statements = later.statements - earlier.statements
        difference.prepares = later.prepares - earlier.prepares
        difference.commits = later.commits - earlier.commits
        return difference
    }

    public var description: String {
        "\(roundTrips) round trips, \(statements) statements, \(prepares) prepares, \(commits) commits"
    }
}

/// The running totals the connections of one store add to.
final class PostgresCounters: Sendable {
    private let totals = Mutex(PostgresTraffic())

    func count(roundTrips: Int = 0, statements: Int = 0, prepares: Int = 0, commits: Int = 0) {
        totals.withLock { totals in
            totals.roundTrips += roundTrips
            totals.statements += statements
            totals.prepares += prepares
            totals.commits += commits
        }
    }

    var traffic: PostgresTraffic { totals.withLock { $0 } }
}
