import CLibPQ
import Foundation

/// libpq's failures as `PostgresError`: a lost connection when libpq has given up on it, the
/// server's SQLSTATE and constraint otherwise, and never a bound value.
extension PostgresConnection {
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

    /// Marks the connection unusable (the pool discards it) and returns the error to throw: a lost
    /// connection when libpq says so.
    func poison(_ what: String) -> PostgresError {
        let brokenBefore = PQstatus(handle) != CONNECTION_OK
        poisoned = true
        let cause = Self.oneLine(String(cString: PQerrorMessage(handle)))
        if brokenBefore {
            return PostgresError(.connectionLost, "lost the connection to PostgreSQL at \(endpoint): \(cause)")
        }
        return PostgresError(.misuse, "PostgreSQL connection to \(endpoint): \(what) (\(cause))")
    }

    /// The server answers read-only: the connection is dropped like a lost one (the pool discards
    /// it), so the next one walks the host list instead of staying on a standby.
    func readOnlyServer(_ detail: String) -> PostgresError {
        poisoned = true
        return PostgresError(
            .connectionLost,
            "PostgreSQL at \(endpoint) is read-only (a standby, or a demoted primary): \(detail)"
        )
    }

    /// A failed result as a `PostgresError`, a lost connection when libpq has given up on it:
    /// `lost`, or by default libpq's connection status.
    func error(from result: OpaquePointer?, lost: Bool? = nil) -> PostgresError {
        let error = Self.error(from: result, connectionMessage: String(cString: PQerrorMessage(handle)))
        if lost ?? (PQstatus(handle) != CONNECTION_OK) {
            return PostgresError(
                .connectionLost,
                "lost the connection to PostgreSQL at \(endpoint): \(error.message)",
                sqlstate: error.sqlstate
            )
        }
        if error.sqlstate == PostgresError.SQLState.readOnlySQLTransaction && !readOnlyTransaction {
            // A write refused outside a READ ONLY transaction: the server itself is read-only (a
            // standby, or a primary demoted under this connection; docs/architecture.md §8.3,
            // "Failover"). The connection is dropped like a lost one, so the next one walks the host list.
            return readOnlyServer(error.message)
        }
        if error.sqlstate == PostgresError.SQLState.invalidSQLStatementName {
            // Someone deallocated our statements (a pooler's DISCARD ALL): prepare them afresh.
            prepared.removeAll()
        }
        return error
    }

    /// Passes a result with an expected status through; anything else becomes a `PostgresError`
    /// (the result is freed), marked as a lost connection when the connection is broken.
    func check(
        _ result: OpaquePointer?,
        expecting statuses: [ExecStatusType]
    ) throws(PostgresError)
        -> OpaquePointer
    {
        if let result, statuses.contains(PQresultStatus(result)) { return result }
        defer { PQclear(result) }
        throw error(from: result, lost: isBroken)
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
