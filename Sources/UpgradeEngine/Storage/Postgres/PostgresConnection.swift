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
    /// Requests sent and answered: a prepare, an execution and a simple query count one each.
    private(set) var roundTrips = 0

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
    var isBroken: Bool { PQstatus(handle) != CONNECTION_OK }

    var transactionStatus: TransactionStatus {
        switch PQtransactionStatus(handle) {
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

    /// Runs a parameterised statement and returns its rows. Prepared on first use, then reused.
    @discardableResult
    func query(_ sql: String, _ arguments: [SQLValue] = []) throws(PostgresError) -> [[SQLValue]] {
        let name = try statementName(for: sql)
        let result = try withEncoded(arguments) { values throws(PostgresError) -> OpaquePointer in
            roundTrips += 1
            return try check(
                PQexecPrepared(handle, name, Int32(values.count), values, nil, nil, 0),
                expecting: [PGRES_TUPLES_OK, PGRES_COMMAND_OK]
            )
        }
        defer { PQclear(result) }
        changes = Int(String(cString: PQcmdTuples(result))) ?? 0
        return Self.rows(of: result)
    }

    /// Runs SQL without arguments through the simple-query protocol: DDL, a migration script with
    /// several statements, transaction control. Nothing is prepared.
    func execute(_ sql: String) throws(PostgresError) {
        roundTrips += 1
        let result = try check(PQexec(handle, sql), expecting: [PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY])
        changes = Int(String(cString: PQcmdTuples(result))) ?? 0
        PQclear(result)
    }

    private func statementName(for sql: String) throws(PostgresError) -> String {
        if let name = prepared[sql] { return name }
        preparedSerial += 1
        let name = "siwa_\(preparedSerial)"
        roundTrips += 1
        // Parameter types are left to the server, which infers them from the statement.
        PQclear(try check(PQprepare(handle, name, sql, 0, nil), expecting: [PGRES_COMMAND_OK]))
        prepared[sql] = name
        return name
    }

    // MARK: Transactions

    func begin(_ isolation: IsolationLevel = .readCommitted, readOnly: Bool = false) throws(PostgresError) {
        try execute("BEGIN ISOLATION LEVEL \(isolation.rawValue)\(readOnly ? " READ ONLY" : "")")
    }

    /// Commits, or throws. A transaction in which a statement failed cannot commit: PostgreSQL
    /// answers such a COMMIT with ROLLBACK and no error, which is reported here as one.
    func commit() throws(PostgresError) {
        roundTrips += 1
        let result = try check(PQexec(handle, "COMMIT"), expecting: [PGRES_COMMAND_OK])
        defer { PQclear(result) }
        if String(cString: PQcmdStatus(result)) == "ROLLBACK" {
            throw PostgresError(
                .server,
                "the transaction had failed and was rolled back instead of committed",
                sqlstate: PostgresError.SQLState.inFailedSQLTransaction
            )
        }
    }

    func rollback() throws(PostgresError) {
        try execute("ROLLBACK")
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

    // MARK: Encoding and decoding

    /// Text-format parameters as C strings in one buffer that lives for the call. NULL is a null
    /// pointer; bytea is sent as `\x` and hex digits.
    private func withEncoded<T>(
        _ arguments: [SQLValue],
        _ body: ([UnsafePointer<CChar>?]) throws(PostgresError) -> T
    ) throws(PostgresError) -> T {
        var storage: [CChar] = []
        var offsets: [Int?] = []
        offsets.reserveCapacity(arguments.count)
        for (index, argument) in arguments.enumerated() {
            switch argument {
            case .null:
                offsets.append(nil)
                continue
            case .integer(let value):
                offsets.append(storage.count)
                storage.append(contentsOf: String(value).utf8.lazy.map { CChar(bitPattern: $0) })
            case .text(let value):
                // A text-format value ends at its first NUL, which PostgreSQL text cannot hold anyway.
                guard !value.utf8.contains(0) else {
                    throw PostgresError(
                        .misuse,
                        "PostgreSQL cannot store argument \(index + 1): it is text with a NUL character"
                    )
                }
                offsets.append(storage.count)
                storage.append(contentsOf: value.utf8.lazy.map { CChar(bitPattern: $0) })
            case .blob(let bytes):
                offsets.append(storage.count)
                storage.reserveCapacity(storage.count + 2 + bytes.count * 2 + 1)
                storage.append(CChar(UInt8(ascii: "\\")))
                storage.append(CChar(UInt8(ascii: "x")))
                for byte in bytes {
                    storage.append(Self.hexDigits[Int(byte >> 4)])
                    storage.append(Self.hexDigits[Int(byte & 0x0f)])
                }
            }
            storage.append(0)
        }
        return try storage.withUnsafeBufferPointer { buffer throws(PostgresError) -> T in
            let base = buffer.baseAddress
            let pointers = offsets.map { offset -> UnsafePointer<CChar>? in
                guard let offset, let base else { return nil }
                return base + offset
            }
            return try body(pointers)
        }
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
