import CLibPQ

/// The pipeline (docs/architecture.md §8.3): queued commands and the statement the caller waits for
/// go out in one batch with one sync, and every answer is read back in order.
extension PostgresConnection {
    /// A command not sent yet.
    struct Command {
        enum Kind {
            /// What opens a transaction (BEGIN, then its settings): dropped unsent when nothing follows.
            case opening(String)
            /// Transaction control: no parameters, not prepared.
            case control(String)
            case statement(sql: String, arguments: PostgresArguments)
        }
        let kind: Kind
        let onError: ((PostgresError) -> PostgresError)?

        init(_ kind: Kind, onError: ((PostgresError) -> PostgresError)? = nil) {
            self.kind = kind
            self.onError = onError
        }

        var isOpening: Bool {
            if case .opening = kind { true } else { false }
        }
    }

    /// What one answer read back from a batch belongs to.
    enum Answer {
        case prepare(sql: String, name: String)
        case command(Int)
    }

    /// Sends every queued command and a pipeline sync in one write, then reads every answer: one
    /// round trip, however many commands. Returns the last command's rows and sets `changes` from
    /// it. The first command that failed is thrown; the server skipped those after it.
    @discardableResult
    func roundTrip() throws(PostgresError) -> [[SQLValue]] {
        let commands = queue
        queue.removeAll()
        guard !poisoned else { throw poison("the connection was left in an unknown state") }
        try enterPipeline()
        var answers: [Answer] = []
        var naming: [String: String] = [:]
        for (index, command) in commands.enumerated() {
            switch command.kind {
            case .opening(let sql), .control(let sql):
                guard PQsendQueryParams(handle, sql, 0, nil, nil, nil, nil, 0) == 1 else {
                    throw poison("could not send a command")
                }
            case .statement(let sql, let arguments) where !preparesStatements:
                // The unnamed statement: parsed, bound and run in one go, replaced by the next one.
                let sent = arguments.withPointers { values in
                    PQsendQueryParams(handle, sql, Int32(values.count), nil, values, nil, nil, 0)
                }
                guard sent == 1 else { throw poison("could not send a statement") }
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
                        rows = PostgresRowDecoder.rows(of: result)
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

    func enterPipeline() throws(PostgresError) {
        guard PQpipelineStatus(handle) == PQ_PIPELINE_OFF else { return }
        guard PQenterPipelineMode(handle) == 1 else { throw poison("could not enter pipeline mode") }
    }

    /// Reads what is still unanswered and leaves pipeline mode, so that a simple query may be sent.
    func leavePipeline() throws(PostgresError) {
        try readUnread()
        if PQpipelineStatus(handle) != PQ_PIPELINE_OFF { PQexitPipelineMode(handle) }
    }

    /// Reads the answers to batches sent without waiting (a ROLLBACK). One that failed leaves the
    /// connection in a state nobody knows: it is discarded.
    func readUnread() throws(PostgresError) {
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
}
