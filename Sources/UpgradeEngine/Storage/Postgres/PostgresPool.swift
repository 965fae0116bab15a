import Foundation

/// A bounded pool of PostgreSQL connections, opened on demand up to `maxConnections`.
///
/// A connection is leased to one thread at a time (handed out and taken back under `condition`),
/// the invariant that makes this class `@unchecked Sendable` while `PostgresConnection` is not.
/// When every connection is in use, a lease waits at most `checkoutTimeout` and then fails with
/// `poolExhausted`, or with `connectFailed` when the slots it waited for were held by connects that
/// had not finished or had just failed: a request never hangs on the pool, and an unreachable server
/// is reported as such rather than as load. Broken connections are discarded when they come back;
/// since a broken connection usually means the server restarted or the network broke, the idle ones
/// are then checked with one round trip before their next use, so service resumes by itself once the
/// server is back.
final class PostgresPool: @unchecked Sendable {
    let configuration: PostgresConfiguration
    let maxConnections: Int
    /// Seconds a lease waits for a free connection.
    let checkoutTimeout: Double
    /// Made in each transaction (`PostgresConnection.init`).
    private let settings: [(name: String, value: String)]
    /// What the pool's connections sent, added up.
    let counters = PostgresCounters()
    private let condition = NSCondition()
    private var idle: [Idle] = []
    private var open = 0
    /// Reserved slots whose connect has not returned yet.
    private var connecting = 0
    /// The last connect failed, and none has succeeded since.
    private var connectsFailing = false

    private struct Idle {
        let connection: PostgresConnection
        /// Run a health check before handing it out again.
        var needsCheck: Bool
    }

    /// Opens nothing yet: the first lease connects.
    init(
        configuration: PostgresConfiguration,
        maxConnections: Int = 8,
        checkoutTimeout: Double = 5,
        settings: [(name: String, value: String)] = []
    ) {
        self.configuration = configuration
        self.maxConnections = max(1, maxConnections)
        self.checkoutTimeout = max(0, checkoutTimeout)
        self.settings = settings
    }

    /// Connections open now, leased or idle.
    var openConnections: Int {
        condition.lock()
        defer { condition.unlock() }
        return open
    }

    var idleConnections: Int {
        condition.lock()
        defer { condition.unlock() }
        return idle.count
    }

    /// Runs `body` with a leased connection and takes it back, whatever `body` does.
    func withConnection<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        let connection = try lease()
        let value: T
        do {
            value = try body(connection)
        } catch {
            release(connection, after: error)
            throw error
        }
        release(connection)
        return value
    }

    /// A connection for the caller alone until `release`: an idle one, a new one while fewer than
    /// `maxConnections` are open, or one given back within `checkoutTimeout`.
    func lease() throws(PostgresError) -> PostgresConnection {
        let deadline = Date(timeIntervalSinceNow: checkoutTimeout)
        while true {
            switch try reserve(until: deadline) {
            case .idle(let entry):
                if !entry.needsCheck || entry.connection.isHealthy() { return entry.connection }
                forget()
            case .new:
                do {
                    let connection = try PostgresConnection(configuration, settings: settings)
                    connection.counters = counters
                    connected(true)
                    return connection
                } catch {
                    connected(false)
                    forget()
                    throw error
                }
            }
        }
    }

    /// Takes a leased connection back. One left inside a transaction is rolled back; one that is
    /// broken, or stays in a transaction, is closed. After an error that says the server could not
    /// be reached, the connection is checked before its next use.
    func release(_ connection: PostgresConnection, after error: (any Error)? = nil) {
        var keep = !connection.isBroken
        if keep && connection.transactionStatus != .idle {
            try? connection.rollback()
            keep = !connection.isBroken && connection.transactionStatus == .idle
        }
        let suspect = (error as? PostgresError).map { $0.kind == .connectionLost || $0.kind == .connectFailed } ?? false
        condition.lock()
        if keep {
            idle.append(Idle(connection: connection, needsCheck: suspect))
        } else {
            open -= 1
            for index in idle.indices { idle[index].needsCheck = true }
        }
        condition.signal()
        condition.unlock()
    }

    private enum Reservation {
        case idle(Idle)
        case new
    }

    private func reserve(until deadline: Date) throws(PostgresError) -> Reservation {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let entry = idle.popLast() { return .idle(entry) }
            if open < maxConnections {
                open += 1
                connecting += 1
                return .new
            }
            if !condition.wait(until: deadline) && idle.isEmpty && open >= maxConnections {
                let waited = String(format: "%g", checkoutTimeout)
                if connecting > 0 || connectsFailing {
                    throw PostgresError(
                        .connectFailed,
                        "cannot connect to PostgreSQL at \(configuration.endpoint): no connection was had "
                            + "within \(waited) s while connecting \(connectsFailing ? "fails" : "is slow")"
                    )
                }
                throw PostgresError(
                    .poolExhausted,
                    "all \(maxConnections) PostgreSQL connections to \(configuration.endpoint) stayed in use "
                        + "for \(waited) s"
                )
            }
        }
    }

    /// A reserved slot's connect returned.
    private func connected(_ succeeded: Bool) {
        condition.lock()
        connecting -= 1
        connectsFailing = !succeeded
        condition.unlock()
    }

    /// A reserved or leased connection that will not come back.
    private func forget() {
        condition.lock()
        open -= 1
        condition.signal()
        condition.unlock()
    }
}
