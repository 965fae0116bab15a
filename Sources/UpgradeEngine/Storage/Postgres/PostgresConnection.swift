import CLibPQ
import Foundation

/// One libpq connection. Not Sendable: like `SQLiteConnection`, it is used by one thread at a time,
/// the one that leased it from `PostgresPool`.
///
/// Nothing outlives a transaction on the server, so the connection may go through a transaction
/// pooler (PgBouncer in `pool_mode = transaction`), which hands each transaction whichever server
/// session is free: every statement with arguments is sent as the unnamed statement (parse, bind and
/// execute together, one round trip a run), and the server settings (timeouts, `bytea_output`) are
/// set with `set_config(..., true)` in each transaction, behind its BEGIN. With
/// `prepared_statements=on` in the URL (a direct connection only) a statement is instead prepared
/// once per connection, named after its place in the cache, and then only bound and executed.
/// Parameters and results travel in text format; `SQLValue` covers what the store needs: text,
/// 64-bit integers, bytea and NULL. An argument's type comes from the statement, so SQL where it
/// cannot be inferred needs a cast (`$1::bigint`).
///
/// The pipeline that sends and reads batches is in `PostgresConnection+Pipeline.swift`, the mapping
/// of libpq's failures to `PostgresError` in `+Errors.swift`; `PostgresArguments` encodes what a
/// statement binds and `PostgresRowDecoder` reads what it returns.
final class PostgresConnection {
    enum IsolationLevel: String, Sendable {
        case readCommitted = "READ COMMITTED"
        case repeatableRead = "REPEATABLE READ"
        case serializable = "SERIALIZABLE"
    }

    enum TransactionStatus: Sendable {
        case idle, active, inTransaction, failed, unknown
    }

    // The state below is internal, not private, for the `+Pipeline` and `+Errors` extensions
    // (other files); nothing outside this type's files touches it.
    let handle: OpaquePointer
    /// Where the connection goes, for messages: host and port, never the password.
    let endpoint: String
    /// Prepare statements under names kept for the connection's life (`prepared_statements=on`).
    let preparesStatements: Bool
    /// The statement that follows every BEGIN: the transaction's server settings.
    let settingsStatement: String
    /// SQL text → the name it was prepared under on this connection.
    var prepared: [String: String] = [:]
    var preparedSerial = 0
    /// Rows changed by the last statement (INSERT, UPDATE, DELETE), from its command tag.
    var changes = 0
    /// Times the connection sent requests and waited for their answers. Commands pipelined
    /// together (a BEGIN and its settings, queued writes, a PREPARE, the statement, a COMMIT) share one.
    var roundTrips = 0
    /// Where the store adds this connection's round trips, statements and commits up.
    var counters: PostgresCounters?
    /// Commands not sent yet: they go with the next one the caller waits for.
    var queue: [Command] = []
    /// Batches sent without waiting for their answers (a ROLLBACK), read before the next answers.
    var unreadSyncs = 0
    /// Set when the connection's protocol state is unknown: it is discarded.
    var poisoned = false
    /// The last transaction begun was declared READ ONLY: a write refused in it is the caller's mistake,
    /// not a read-only server.
    var readOnlyTransaction = false

    /// Connects to the first of `configuration.hosts` that accepts the connection and matches its
    /// `target_session_attrs` (libpq checks that), each host failing after `connectTimeout` seconds;
    /// the error names every host tried and why it was passed over. `settings` are server settings
    /// (`lock_timeout`, `statement_timeout`, ...) made for each transaction this connection begins,
    /// pipelined with its BEGIN: no round trip, and nothing a pooler must carry between
    /// transactions. Statements run outside a transaction get the server's defaults.
    init(
        _ configuration: PostgresConfiguration,
        settings: [(name: String, value: String)] = []
    ) throws(PostgresError) {
        preparesStatements = configuration.preparedStatements
        settingsStatement = Self.settingsStatement(settings)
        var causes: [String] = []
        for server in configuration.hosts {
            switch Self.open(configuration, server) {
            case .success(let connection):
                handle = connection
                endpoint = server.endpoint
                // libpq prints server notices (a WARNING, a NOTICE from DDL) on stderr; nothing here reads them.
                PQsetNoticeProcessor(handle, { _, _ in }, nil)
                return
            case .failure(let failure):
                let cause = failure.description
                causes.append(configuration.hosts.count == 1 ? cause : "\(server.endpoint): \(cause)")
            }
        }
        let tried = configuration.hosts.count == 1 ? "at \(configuration.endpoint)" : "at any host"
        throw PostgresError(.connectFailed, "cannot connect to PostgreSQL \(tried): \(causes.joined(separator: "; "))")
    }

    /// One host's connection, or why it was refused (one line, never the password).
    private static func open(
        _ configuration: PostgresConfiguration,
        _ server: PostgresConfiguration.Host
    ) -> Result<OpaquePointer, Failure> {
        let parameters = configuration.connectionParameters(to: server)
        guard let connection = connect(parameters) else { return .failure(Failure("out of memory")) }
        guard PQstatus(connection) == CONNECTION_OK else {
            var cause = oneLine(String(cString: PQerrorMessage(connection)))
            // libpq does not quote the password; this keeps it so should that ever change.
            if let password = configuration.password, !password.isEmpty {
                cause = Self.replacingBytes(password, with: "(redacted)", in: cause)
            }
            PQfinish(connection)
            return .failure(Failure(cause))
        }
        return .success(connection)
    }

    /// Why one host was passed over.
    private struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    deinit { PQfinish(handle) }

    /// One SELECT that makes every setting for the rest of the transaction (as `SET LOCAL` would).
    /// Results are decoded from text: bytea must come as hex whatever the server's default is.
    private static func settingsStatement(_ settings: [(name: String, value: String)]) -> String {
        let all = [(name: "bytea_output", value: "hex")] + settings
        return "SELECT "
            + all.map { "set_config(\(literal($0.name)), \(literal($0.value)), true)" }
            .joined(separator: ", ")
    }

    /// A string literal (standard_conforming_strings is on in every supported server): every quote
    /// byte doubled. Not `replacingOccurrences`, which on Linux compares as Unicode collation does
    /// and leaves a quote followed by a combining mark single (docs/architecture.md §12).
    static func literal(_ text: String) -> String {
        "'" + replacingBytes("'", with: "''", in: text) + "'"
    }

    /// `text` with every occurrence of `target`'s UTF-8 bytes replaced by `replacement`'s (the
    /// standard library's `replacing` over bytes, not Characters). A match of valid UTF-8 begins and
    /// ends on scalar boundaries, so the result is valid UTF-8 too. An empty `target` changes nothing.
    static func replacingBytes(_ target: String, with replacement: String, in text: String) -> String {
        guard !target.isEmpty else { return text }
        let replaced = Array(text.utf8).replacing(Array(target.utf8), with: Array(replacement.utf8))
        return String(decoding: replaced, as: UTF8.self)
    }

    /// Keyword and value arrays as C strings that live for the call; no conninfo string is built,
    /// so nothing needs quoting.
    private static func connect(_ parameters: [(String, String)]) -> OpaquePointer? {
        var storage: [CChar] = []
        var keywordOffsets: [Int] = []
        var valueOffsets: [Int] = []
        for (keyword, value) in parameters {
            keywordOffsets.append(storage.count)
            storage.append(contentsOf: keyword.utf8CString)
            valueOffsets.append(storage.count)
            storage.append(contentsOf: value.utf8CString)
        }
        defer {
            // The password was in this buffer; do not leave it in freed memory.
            for index in storage.indices { storage[index] = 0 }
        }
        return storage.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            guard let base = buffer.baseAddress else { return nil }
            let keywords: [UnsafePointer<CChar>?] = keywordOffsets.map { base + $0 } + [nil]
            let values: [UnsafePointer<CChar>?] = valueOffsets.map { base + $0 } + [nil]
            return PQconnectdbParams(keywords, values, 0)
        }
    }

    /// The connection is unusable (the server closed it, the network broke): discard it.
    var isBroken: Bool { poisoned || PQstatus(handle) != CONNECTION_OK }

    /// A transaction begun or written to but not sent yet counts as open; one whose ROLLBACK was
    /// sent counts as ended, its answer not read yet.
    var transactionStatus: TransactionStatus {
        if !queue.isEmpty { return .inTransaction }
        if unreadSyncs > 0 { return .idle }
        return switch PQtransactionStatus(handle) {
        case PQTRANS_IDLE: .idle
        case PQTRANS_ACTIVE: .active
        case PQTRANS_INTRANS: .inTransaction
        case PQTRANS_INERROR: .failed
        default: .unknown
        }
    }

    /// The server process serving this connection (`pg_backend_pid()`).
    var backendPID: Int32 { PQbackendPID(handle) }

    /// Statements prepared on this connection so far.
    var preparedStatementCount: Int { prepared.count }

    /// One round trip that proves the connection still answers.
    func isHealthy() -> Bool {
        guard !isBroken else { return false }
        do {
            try execute("SELECT 1")
            return true
        } catch {
            return false
        }
    }

    // MARK: Statements
    //
    // Requests go out through libpq's pipeline mode: whatever is queued (a transaction's BEGIN and
    // settings, writes whose answer the caller does not need, a first use's PREPARE) is sent with the next
    // statement the caller waits for, and one pipeline sync ends the batch. The server runs the
    // commands in order exactly as if each had been sent alone; only the waits are fewer.

    /// Runs a parameterised statement and returns its rows, in one round trip together with every
    /// queued command. Sent as the unnamed statement; with `prepared_statements=on`, prepared on
    /// first use (the PREPARE travels with it), then reused.
    @discardableResult
    func query(_ sql: String, _ arguments: [SQLValue] = []) throws(PostgresError) -> [[SQLValue]] {
        queue.append(Command(.statement(sql: sql, arguments: try PostgresArguments(arguments))))
        return try roundTrip()
    }

    /// Queues a statement whose rows and row count nobody reads. It is sent with the next command the
    /// caller waits for (`query`, `commit`, `execute`); if it fails, that command throws its error,
    /// turned by `onError` into the caller's if given, and the server skips what followed it.
    func enqueue(
        _ sql: String,
        _ arguments: [SQLValue] = [],
        onError: ((PostgresError) -> PostgresError)? = nil
    ) throws(PostgresError) {
        queue.append(Command(.statement(sql: sql, arguments: try PostgresArguments(arguments)), onError: onError))
        // A blocking connection must not write a batch whose answers could fill the socket before
        // it reads them: a long run of writes (a migration's re-keying) goes out in slices.
        if queue.count >= Self.maxQueued { try roundTrip() }
    }

    /// Commands queued at most before they are sent; their answers take a few kilobytes.
    static let maxQueued = 64

    /// Runs SQL without arguments through the simple-query protocol: DDL, a migration script with
    /// several statements. Nothing is prepared; queued commands are sent (and answered) first.
    func execute(_ sql: String) throws(PostgresError) {
        if !queue.isEmpty { try roundTrip() }
        try leavePipeline()
        roundTrips += 1
        counters?.count(roundTrips: 1, statements: 1)
        let result = try check(PQexec(handle, sql), expecting: [PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY])
        changes = Int(String(cString: PQcmdTuples(result))) ?? 0
        PQclear(result)
    }

    // MARK: Transactions

    /// Queues the BEGIN and the transaction's settings: they go to the server with the
    /// transaction's first statement.
    func begin(_ isolation: IsolationLevel = .readCommitted, readOnly: Bool = false) throws(PostgresError) {
        readOnlyTransaction = readOnly
        queue.append(Command(.opening("BEGIN ISOLATION LEVEL \(isolation.rawValue)\(readOnly ? " READ ONLY" : "")")))
        queue.append(Command(.opening(settingsStatement)))
    }

    /// Commits, or throws: sends the queued writes and COMMIT in one round trip. A transaction in
    /// which a statement failed cannot commit: PostgreSQL answers such a COMMIT with ROLLBACK and no
    /// error, which is reported here as one. A transaction that never sent a statement has nothing to commit.
    func commit() throws(PostgresError) {
        if !queue.isEmpty && queue.allSatisfy(\.isOpening) {
            queue.removeAll()
            return
        }
        queue.append(Command(.control("COMMIT")))
        try roundTrip()
    }

    /// Ends the transaction without waiting: ROLLBACK is sent now and its answer read with the next
    /// round trip, since nothing the caller does depends on it (it frees the transaction's locks as
    /// soon as the server reads it). Queued writes are dropped unsent; a transaction the server
    /// never saw (only its BEGIN queued) ends without a word.
    func rollback() throws(PostgresError) {
        let neverSent = queue.first?.isOpening
        queue.removeAll()
        if neverSent == true || unreadSyncs > 0 || PQtransactionStatus(handle) == PQTRANS_IDLE { return }
        try enterPipeline()
        guard PQsendQueryParams(handle, "ROLLBACK", 0, nil, nil, nil, nil, 0) == 1, PQpipelineSync(handle) == 1
        else { throw poison("could not send ROLLBACK") }
        unreadSyncs += 1
        counters?.count(statements: 1)
    }

    /// Runs `body` in one transaction: commits when it returns, rolls back when it throws and
    /// rethrows its error unchanged (a failed rollback is not news then).
    func transaction<T>(
        _ isolation: IsolationLevel = .readCommitted,
        readOnly: Bool = false,
        _ body: () throws -> T
    ) throws -> T {
        try begin(isolation, readOnly: readOnly)
        let value: T
        do {
            value = try body()
        } catch {
            try? rollback()
            throw error
        }
        try commit()
        return value
    }
}

@available(*, unavailable)
extension PostgresConnection: Sendable {}
