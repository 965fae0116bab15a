import CLibPQ
import Foundation

/// One libpq connection. Not Sendable: like `SQLiteConnection`, it is used by one thread at a time,
/// the one that leased it from `PostgresPool`.
///
/// Every statement with arguments is prepared once per connection (named after its place in the
/// cache) and then only bound and executed: one round trip per run. Parameters and results travel
/// in text format; `SQLValue` covers what the store needs: text, 64-bit integers, bytea and NULL.
/// An argument's type comes from the statement, so SQL where it cannot be inferred needs a cast
/// (`$1::bigint`).
final class PostgresConnection {
    enum IsolationLevel: String, Sendable {
        case readCommitted = "READ COMMITTED"
        case repeatableRead = "REPEATABLE READ"
        case serializable = "SERIALIZABLE"
    }

    enum TransactionStatus: Sendable {
        case idle, active, inTransaction, failed, unknown
    }

    private let handle: OpaquePointer
    /// Where the connection goes, for messages: host and port, never the password.
    let endpoint: String
    /// SQL text → the name it was prepared under on this connection.
    private var prepared: [String: String] = [:]
    private var preparedSerial = 0
    /// Rows changed by the last statement (INSERT, UPDATE, DELETE), from its command tag.
    private(set) var changes = 0
    /// Times the connection sent requests and waited for their answers. Commands pipelined
    /// together (a BEGIN, queued writes, a PREPARE, the statement, a COMMIT) share one.
    private(set) var roundTrips = 0
    /// Where the store adds this connection's round trips, statements and commits up.
    var counters: PostgresCounters?
    /// Commands not sent yet: they go with the next one the caller waits for.
    private var queue: [Command] = []
    /// Batches sent without waiting for their answers (a ROLLBACK), read before the next answers.
    private var unreadSyncs = 0
    /// Set when the connection's protocol state is unknown: it is discarded.
    private var poisoned = false

    /// Connects, failing after `configuration.connectTimeout` seconds. `sessionSettings` are
    /// server settings (`lock_timeout`, `statement_timeout`, ...) applied at login, costing no round trip.
    init(
        _ configuration: PostgresConfiguration,
        sessionSettings: [(name: String, value: String)] = []
    ) throws(PostgresError) {
        endpoint = configuration.endpoint
        let parameters = configuration.connectionParameters(sessionSettings: sessionSettings)
        let connection = Self.connect(parameters)
        guard let connection else {
            throw PostgresError(.connectFailed, "cannot connect to PostgreSQL at \(endpoint): out of memory")
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            var cause = Self.oneLine(String(cString: PQerrorMessage(connection)))
            // libpq does not quote the password; this keeps it so should that ever change.
            if let password = configuration.password, !password.isEmpty {
                cause = cause.replacingOccurrences(of: password, with: "(redacted)")
            }
            PQfinish(connection)
            throw PostgresError(.connectFailed, "cannot connect to PostgreSQL at \(endpoint): \(cause)")
        }
        handle = connection
        // libpq prints server notices (a WARNING, a NOTICE from DDL) on stderr; nothing here reads them.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
    }

    deinit { PQfinish(handle) }

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

    /// libpq's messages span lines ("connection to server at ... failed: ...\n\tIs the server
    /// running ...?"), one per address tried: one line per distinct cause, prefixes dropped.
    static func oneLine(_ message: String) -> String {
        var causes: [String] = []
        for line in message.split(whereSeparator: \.isNewline) {
            var text = line.trimmingCharacters(in: .whitespaces)
            if text.hasPrefix("Is the server running") || text.hasPrefix("This probably means")
                || text.hasPrefix("before or while processing")
            {
                continue
            }
            if let failed = text.range(of: " failed: ") { text = String(text[failed.upperBound...]) }
            for prefix in ["FATAL:", "ERROR:"] where text.hasPrefix(prefix) {
                text = text.dropFirst(prefix.count).trimmingCharacters(in: .whitespaces)
            }
            if !text.isEmpty && !causes.contains(text) { causes.append(text) }
        }
        return causes.isEmpty ? "no reason given" : causes.joined(separator: "; ")
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
    // Requests go out through libpq's pipeline mode: whatever is queued (a transaction's BEGIN,
    // writes whose answer the caller does not need, the first use's PREPARE) is sent with the next
    // statement the caller waits for, and one pipeline sync ends the batch. The server runs the
    // commands in order exactly as if each had been sent alone; only the waits are fewer.

    /// Runs a parameterised statement and returns its rows, in one round trip together with every
    /// queued command. Prepared on first use (the PREPARE travels with it), then reused.
    @discardableResult
    func query(_ sql: String, _ arguments: [SQLValue] = []) throws(PostgresError) -> [[SQLValue]] {
        queue.append(Command(.statement(sql: sql, arguments: try Self.encode(arguments))))
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
        queue.append(Command(.statement(sql: sql, arguments: try Self.encode(arguments)), onError: onError))
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

    /// Queues the BEGIN: it goes to the server with the transaction's first statement.
    func begin(_ isolation: IsolationLevel = .readCommitted, readOnly: Bool = false) throws(PostgresError) {
        queue.append(Command(.control("BEGIN ISOLATION LEVEL \(isolation.rawValue)\(readOnly ? " READ ONLY" : "")")))
    }

    /// Commits, or throws: sends the queued writes and COMMIT in one round trip. A transaction in
    /// which a statement failed cannot commit: PostgreSQL answers such a COMMIT with ROLLBACK and no
    /// error, which is reported here as one. A transaction that never sent a statement has nothing to commit.
    func commit() throws(PostgresError) {
        if queue.count == 1, case .control(let sql) = queue[0].kind, sql.hasPrefix("BEGIN") {
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
        let neverSent = queue.first.map {
            if case .control(let sql) = $0.kind { sql.hasPrefix("BEGIN") } else { false }
        }
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

    // MARK: Pipeline

    /// A command not sent yet.
    private struct Command {
        enum Kind {
            /// Transaction control: no parameters, not prepared.
            case control(String)
            case statement(sql: String, arguments: EncodedArguments)
        }
        let kind: Kind
        let onError: ((PostgresError) -> PostgresError)?

        init(_ kind: Kind, onError: ((PostgresError) -> PostgresError)? = nil) {
            self.kind = kind
            self.onError = onError
        }
    }

    /// What one answer read back from a batch belongs to.
    private enum Answer {
        case prepare(sql: String, name: String)
        case command(Int)
    }

    /// Sends every queued command and a pipeline sync in one write, then reads every answer: one
    /// round trip, however many commands. Returns the last command's rows and sets `changes` from
    /// it. The first command that failed is thrown; the server skipped those after it.
    @discardableResult
    private func roundTrip() throws(PostgresError) -> [[SQLValue]] {
        let commands = queue
        queue.removeAll()
        guard !poisoned else { throw poison("the connection was left in an unknown state") }
        try enterPipeline()
        var answers: [Answer] = []
        var naming: [String: String] = [:]
        for (index, command) in commands.enumerated() {
            switch command.kind {
            case .control(let sql):
                guard PQsendQueryParams(handle, sql, 0, nil, nil, nil, nil, 0) == 1 else {
                    throw poison("could not send a command")
                }
            case .statement(let sql, let arguments):
                let name: String
                if let known = prepared[sql] ?? naming[sql] {
                    name = known
                } else {
                    preparedSerial += 1
                    name = "siwa_\(preparedSerial)"
                    // Parameter types are left to the server, which infers them from the statement.
                    guard PQsendPrepare(handle, name, sql, 0, nil) == 1 else {
                        throw poison("could not send a PREPARE")
                    }
                    naming[sql] = name
                    answers.append(.prepare(sql: sql, name: name))
                }
                let sent = arguments.withPointers { values in
                    PQsendQueryPrepared(handle, name, Int32(values.count), values, nil, nil, 0)
                }
                guard sent == 1 else { throw poison("could not send a statement") }
            }
            answers.append(.command(index))
        }
        // Sends the sync and flushes everything in one write.
        guard PQpipelineSync(handle) == 1 else { throw poison("could not send the batch") }
        roundTrips += 1
        counters?.count(
            roundTrips: 1,
            statements: commands.count,
            prepares: answers.count - commands.count
        )
        // Answers to commands sent earlier without waiting come first.
        try readUnread()

        var failure: PostgresError?
        var rows: [[SQLValue]] = []
        for answer in answers {
            guard let result = PQgetResult(handle) else { throw poison("an answer was missing") }
            let status = PQresultStatus(result)
            switch answer {
            case .prepare(let sql, let name):
                if status == PGRES_COMMAND_OK {
                    prepared[sql] = name
                } else if status != PGRES_PIPELINE_ABORTED && failure == nil {
                    failure = error(from: result)
                }
            case .command(let index):
                if status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK {
                    if case .control("COMMIT") = commands[index].kind {
                        if String(cString: PQcmdStatus(result)) == "ROLLBACK" && failure == nil {
                            failure = PostgresError(
                                .server,
                                "the transaction had failed and was rolled back instead of committed",
                                sqlstate: PostgresError.SQLState.inFailedSQLTransaction
                            )
                        } else if failure == nil {
                            counters?.count(commits: 1)
                        }
                    }
                    if index == commands.count - 1 {
                        changes = Int(String(cString: PQcmdTuples(result))) ?? 0
                        rows = Self.rows(of: result)
                    }
                } else if status != PGRES_PIPELINE_ABORTED && failure == nil {
                    let error = error(from: result)
                    failure = commands[index].onError?(error) ?? error
                }
            }
            PQclear(result)
            // Each command's answers end with a null result.
            if let extra = PQgetResult(handle) {
                PQclear(extra)
                throw poison("a command answered more than once")
            }
        }
        guard let sync = PQgetResult(handle) else { throw poison("the batch's end was missing") }
        let synced = PQresultStatus(sync) == PGRES_PIPELINE_SYNC
        PQclear(sync)
        guard synced else { throw poison("the batch's end was missing") }
        PQexitPipelineMode(handle)
        if let failure { throw failure }
        return rows
    }

    private func enterPipeline() throws(PostgresError) {
        guard PQpipelineStatus(handle) == PQ_PIPELINE_OFF else { return }
        guard PQenterPipelineMode(handle) == 1 else { throw poison("could not enter pipeline mode") }
    }

    /// Reads what is still unanswered and leaves pipeline mode, so that a simple query may be sent.
    private func leavePipeline() throws(PostgresError) {
        try readUnread()
        if PQpipelineStatus(handle) != PQ_PIPELINE_OFF { PQexitPipelineMode(handle) }
    }

    /// Reads the answers to batches sent without waiting (a ROLLBACK). One that failed leaves the
    /// connection in a state nobody knows: it is discarded.
    private func readUnread() throws(PostgresError) {
        var nulls = 0
        while unreadSyncs > 0 {
            guard let result = PQgetResult(handle) else {
                nulls += 1
                // A null ends one command's answers; two in a row mean nothing more is coming.
                if nulls > 1 { throw poison("an answer was missing") }
                continue
            }
            nulls = 0
            let status = PQresultStatus(result)
            if status == PGRES_PIPELINE_SYNC {
                unreadSyncs -= 1
            } else if status != PGRES_COMMAND_OK {
                let error = error(from: result)
                PQclear(result)
                poisoned = true
                throw isBroken ? error : PostgresError(.misuse, "ROLLBACK failed: \(error.message)")
            }
            PQclear(result)
        }
    }

    /// Marks the connection unusable (the pool discards it) and returns the error to throw: a lost
    /// connection when libpq says so.
    private func poison(_ what: String) -> PostgresError {
        let brokenBefore = PQstatus(handle) != CONNECTION_OK
        poisoned = true
        let cause = Self.oneLine(String(cString: PQerrorMessage(handle)))
        if brokenBefore {
            return PostgresError(.connectionLost, "lost the connection to PostgreSQL at \(endpoint): \(cause)")
        }
        return PostgresError(.misuse, "PostgreSQL connection to \(endpoint): \(what) (\(cause))")
    }

    /// A failed result as a `PostgresError`, a lost connection when libpq has given up on it.
    private func error(from result: OpaquePointer) -> PostgresError {
        let error = Self.error(from: result, connectionMessage: String(cString: PQerrorMessage(handle)))
        if PQstatus(handle) != CONNECTION_OK {
            return PostgresError(
                .connectionLost,
                "lost the connection to PostgreSQL at \(endpoint): \(error.message)",
                sqlstate: error.sqlstate
            )
        }
        if error.sqlstate == PostgresError.SQLState.invalidSQLStatementName {
            // Someone deallocated our statements (a pooler's DISCARD ALL): prepare them afresh.
            prepared.removeAll()
        }
        return error
    }

    // MARK: Encoding and decoding

    /// Text-format parameters as C strings in one buffer. NULL is a null pointer; bytea is sent as
    /// `\x` and hex digits.
    struct EncodedArguments {
        var storage: [CChar] = []
        var offsets: [Int?] = []

        func withPointers<T>(_ body: ([UnsafePointer<CChar>?]) -> T) -> T {
            storage.withUnsafeBufferPointer { buffer in
                let base = buffer.baseAddress
                return body(
                    offsets.map { offset -> UnsafePointer<CChar>? in
                        guard let offset, let base else { return nil }
                        return base + offset
                    }
                )
            }
        }
    }

    private static func encode(_ arguments: [SQLValue]) throws(PostgresError) -> EncodedArguments {
        var encoded = EncodedArguments()
        encoded.offsets.reserveCapacity(arguments.count)
        for (index, argument) in arguments.enumerated() {
            switch argument {
            case .null:
                encoded.offsets.append(nil)
                continue
            case .integer(let value):
                encoded.offsets.append(encoded.storage.count)
                encoded.storage.append(contentsOf: String(value).utf8.lazy.map { CChar(bitPattern: $0) })
            case .text(let value):
                // A text-format value ends at its first NUL, which PostgreSQL text cannot hold anyway.
                guard !value.utf8.contains(0) else {
                    throw PostgresError(
                        .misuse,
                        "PostgreSQL cannot store argument \(index + 1): it is text with a NUL character"
                    )
                }
                encoded.offsets.append(encoded.storage.count)
                encoded.storage.append(contentsOf: value.utf8.lazy.map { CChar(bitPattern: $0) })
            case .blob(let bytes):
                encoded.offsets.append(encoded.storage.count)
                encoded.storage.reserveCapacity(encoded.storage.count + 2 + bytes.count * 2 + 1)
                encoded.storage.append(CChar(UInt8(ascii: "\\")))
                encoded.storage.append(CChar(UInt8(ascii: "x")))
                for byte in bytes {
                    encoded.storage.append(hexDigits[Int(byte >> 4)])
                    encoded.storage.append(hexDigits[Int(byte & 0x0f)])
                }
            }
            encoded.storage.append(0)
        }
        return encoded
    }

    private static let hexDigits: [CChar] = Array("0123456789abcdef".utf8).map { CChar(bitPattern: $0) }

    /// Type OIDs from the server's catalog (`pg_type`), fixed since PostgreSQL's first releases.
    private enum TypeOID {
        static let bool: UInt32 = 16
        static let bytea: UInt32 = 17
        static let int8: UInt32 = 20
        static let int2: UInt32 = 21
        static let int4: UInt32 = 23
        static let oid: UInt32 = 26
    }

    private enum ColumnKind { case integer, boolean, bytes, text }

    private static func rows(of result: OpaquePointer) -> [[SQLValue]] {
        let rowCount = PQntuples(result)
        let columnCount = PQnfields(result)
        guard rowCount > 0 else { return [] }
        let kinds: [ColumnKind] = (0..<columnCount).map { column in
            switch PQftype(result, column) {
            case TypeOID.int8, TypeOID.int4, TypeOID.int2, TypeOID.oid: .integer
            case TypeOID.bool: .boolean
            case TypeOID.bytea: .bytes
            default: .text
            }
        }
        var rows: [[SQLValue]] = []
        rows.reserveCapacity(Int(rowCount))
        for row in 0..<rowCount {
            var values: [SQLValue] = []
            values.reserveCapacity(Int(columnCount))
            for column in 0..<columnCount {
                guard PQgetisnull(result, row, column) == 0, let pointer = PQgetvalue(result, row, column) else {
                    values.append(.null)
                    continue
                }
                let bytes = UnsafeRawBufferPointer(start: pointer, count: Int(PQgetlength(result, row, column)))
                values.append(decode(bytes, as: kinds[Int(column)]))
            }
            rows.append(values)
        }
        return rows
    }

    private static func decode(_ bytes: UnsafeRawBufferPointer, as kind: ColumnKind) -> SQLValue {
        switch kind {
        case .integer:
            // The server's own text for an integer column: it always parses.
            return .integer(Int64(String(decoding: bytes, as: UTF8.self)) ?? 0)
        case .boolean:
            return .integer(bytes.first == UInt8(ascii: "t") ? 1 : 0)
        case .bytes:
            return .blob(decodeHex(bytes))
        case .text:
            return .text(String(decoding: bytes, as: UTF8.self))
        }
    }

    /// bytea's hex output, `\x` then two digits a byte (`bytea_output = hex` is set at login).
    private static func decodeHex(_ text: UnsafeRawBufferPointer) -> [UInt8] {
        guard text.count >= 2, text[0] == UInt8(ascii: "\\"), text[1] == UInt8(ascii: "x") else { return [] }
        func nibble(_ byte: UInt8) -> UInt8 {
            byte <= UInt8(ascii: "9") ? byte &- UInt8(ascii: "0") : (byte | 0x20) &- UInt8(ascii: "a") &+ 10
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity((text.count - 2) / 2)
        var index = 2
        while index + 1 < text.count {
            bytes.append(nibble(text[index]) << 4 | nibble(text[index + 1]))
            index += 2
        }
        return bytes
    }

    // MARK: Errors

    /// Passes a result with an expected status through; anything else becomes a `PostgresError`
    /// (the result is freed), marked as a lost connection when libpq has given up on it.
    private func check(
        _ result: OpaquePointer?,
        expecting statuses: [ExecStatusType]
    ) throws(PostgresError)
        -> OpaquePointer
    {
        if let result, statuses.contains(PQresultStatus(result)) { return result }
        defer { PQclear(result) }
        let error = Self.error(from: result, connectionMessage: String(cString: PQerrorMessage(handle)))
        if isBroken {
            throw PostgresError(
                .connectionLost,
                "lost the connection to PostgreSQL at \(endpoint): \(error.message)",
                sqlstate: error.sqlstate
            )
        }
        if error.sqlstate == PostgresError.SQLState.invalidSQLStatementName {
            // Someone deallocated our statements (a pooler's DISCARD ALL): prepare them afresh.
            prepared.removeAll()
        }
        throw error
    }

    static func error(from result: OpaquePointer?, connectionMessage: String) -> PostgresError {
        func field(_ code: Int32) -> String? {
            guard let result, let value = PQresultErrorField(result, code) else { return nil }
            return String(cString: value)
        }
        if let result {
            let status = PQresultStatus(result)
            guard status == PGRES_FATAL_ERROR || status == PGRES_NONFATAL_ERROR else {
                return PostgresError(.misuse, "unexpected PostgreSQL result \(String(cString: PQresStatus(status)))")
            }
        }
        guard let sqlstate = field(clibpq_diag_sqlstate) else {
            // libpq's own failure (a broken socket, out of memory): its text is all there is.
            let message = result.map { String(cString: PQresultErrorMessage($0)) } ?? ""
            return PostgresError(.server, oneLine(message.isEmpty ? connectionMessage : message))
        }
        let constraint = field(clibpq_diag_constraint_name)
        let table = field(clibpq_diag_table_name)
        var message: String
        if sqlstate.hasPrefix("22") {
            // A data exception's text can quote the value it refused ("invalid input syntax for
            // type bigint: ..."): only where it happened is kept.
            message = "a bound value was refused"
            if let column = field(clibpq_diag_column_name) { message += " for column \(column)" }
        } else {
            message = oneLine(field(clibpq_diag_message_primary) ?? "no message")
        }
        if let table, !message.contains(table) { message += " (table \(table))" }
        return PostgresError(.server, message, sqlstate: sqlstate, constraint: constraint, table: table)
    }
}

@available(*, unavailable)
extension PostgresConnection: Sendable {}
