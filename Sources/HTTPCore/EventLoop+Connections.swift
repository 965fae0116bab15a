import CSystem
import Glibc

// Reading, answering and closing connections. Everything here runs under the loop's `ownership`:
// on one of the loop's threads, or on a worker delivering its result while the loop sleeps.
// Connections are edge-triggered: an event comes when the socket turns readable or writable (or
// when `updateInterest` re-arms it), so reading goes on until the socket is empty or the connection
// takes no more input, and writing until the socket is full or the output is out.
extension EventLoop {
    func handleEvents(_ events: UInt32, on connection: Connection, now: UInt64) {
        // ERR or HUP: the peer reset or both directions are shut, so nothing more can be sent.
        // Closing at once also keeps a level-triggered HUP from firing forever while we wait on a worker.
        if events & (csystem_EPOLLERR | csystem_EPOLLHUP) != 0 {
            close(connection)
            return
        }
        if events & csystem_EPOLLOUT != 0 {
            guard writeOutput(connection, now: now), !connection.isClosed else { return }
        }
        if events & csystem_EPOLLIN != 0 {
            if connection.isLingering {
                drainLingering(connection)
            } else {
                readRequests(connection, now: now)
            }
        }
    }

    private func readRequests(_ connection: Connection, now: UInt64) {
        // Stops at a short read (the socket is empty: more bytes bring a new edge) or when the
        // connection takes no more input (re-arming the interest later reports what is waiting).
        while case .open = connection.phase, !connection.isClosed, connection.interest & csystem_EPOLLIN != 0 {
            guard let count = receive(connection) else { return }
            if count == 0 {
                // The client is done sending but may still read: answer the complete requests it sent
                // (`writeOutput` closes once nothing is owed), drop a partial one.
                connection.peerClosedWrite = true
                process(connection, now: now)
                return
            }
            if connection.requestStartedAt == nil {
                connection.requestStartedAt = now
            }
            connection.awaitingFirstByte = false
            connection.parser.append(UnsafeRawBufferPointer(rebasing: scratch[0..<count]))
            process(connection, now: now)
            if count < scratch.count { return }
        }
    }

    /// One `recv` into the scratch buffer, retried on EINTR: the byte count (0 at the end of the
    /// stream), or nil when the socket is empty for now or has failed (then it is closed).
    private func receive(_ connection: Connection) -> Int? {
        while true {
            let count = recv(connection.fd, scratch.baseAddress, scratch.count, 0)
            if count >= 0 {
                LoopCounters.increment(counters.bytesRead, by: count)
                return count
            }
            let number = errno
            if number == EINTR { continue }
            if number != EAGAIN && number != EWOULDBLOCK {
                close(connection)
            }
            return nil
        }
    }

    /// Parses what is buffered (as far as the pipelining limit allows), dispatches requests, writes
    /// the responses that are ready in order, and updates the epoll interest.
    func process(_ connection: Connection, now: UInt64) {
        guard !connection.isClosed else { return }
        let limit = context.configuration.maxPipelinedRequests
        var stoppedAtLimit = false
        repeat {
            stoppedAtLimit = parseRequests(connection, limit: limit, now: now)
            encodeReadyResponses(connection, now: now)
            // Requests already buffered get no new readable event, so when answering them freed room
            // under the limit, parse again rather than wait for bytes the client may never send.
        } while stoppedAtLimit && connection.pending.count < limit
        if deferringWrites, case .open = connection.phase, !connection.peerClosedWrite,
            connection.pending.count < limit, connection.interest == csystem_EPOLLIN
        {
            // Written once the whole batch is dispatched (see `EventLoop.run`); the interest stays
            // what it is, so nothing but the write waits.
            if !connection.writeDeferred {
                connection.writeDeferred = true
                deferredWrites.append(connection)
            }
            return
        }
        guard writeOutput(connection, now: now) else { return }
        updateInterest(connection)
    }

    /// Writes what the batch just dispatched answered (see `EventLoop.run`).
    func flushDeferredWrites(now: UInt64) {
        for connection in deferredWrites {
            connection.writeDeferred = false
            guard writeOutput(connection, now: now) else { continue }
            updateInterest(connection)
        }
        deferredWrites.removeAll(keepingCapacity: true)
    }

    /// Dispatches buffered requests until the parser needs bytes, fails, or `limit` requests are
    /// pending. Returns true if it stopped only because of the limit.
    private func parseRequests(_ connection: Connection, limit: Int, now: UInt64) -> Bool {
        var finishedRequest = false
        defer {
            if finishedRequest {
                connection.requestStartedAt = connection.parser.isIdle ? nil : now
            }
        }
        while case .open = connection.phase {
            guard connection.pending.count < limit else { return true }
            guard let event = connection.parser.next() else { return false }
            switch event {
            case .continueExpected:
                // An interim response may only go out when nothing is queued ahead of it.
                if connection.pending.isEmpty && !connection.hasUnsentOutput {
                    let id = nextRequestID()
                    connection.reservedRequestID = id
                    ResponseEncoder.encodeContinue(requestID: id, into: &connection.output)
                }
            case .request(let head, let body):
                finishedRequest = true
                dispatch(head: head, body: body, on: connection)
            case .failure(let error):
                finishedRequest = true
                LoopCounters.increment(counters.malformed)
                answerAndClose(connection, with: HTTPProblem(error))
            }
        }
        return false
    }

    private func dispatch(head: HTTPRequestHead, body: [UInt8], on connection: Connection) {
        LoopCounters.increment(counters.requests)
        let id = takeRequestID(connection)
        let keepAlive = head.keepAlive && !isDraining
        let sequence = connection.nextSequence
        connection.nextSequence &+= 1
        if !keepAlive {
            connection.phase = .closingAfterResponses
        }
        let request = HTTPRequest(head: head, body: body, id: id, client: connection.client)
        var response = context.handler.respondOnEventLoop(to: request)
        if response == nil {
            let job = WorkerPool.Job(request: request, loop: self, connectionID: connection.id, sequence: sequence)
            if keepForThisThread(job) {
                LoopCounters.increment(counters.handledByLoopThreads)
            } else if context.pool.submit(job) {
                unannouncedJobs += 1
            } else {
                LoopCounters.increment(counters.busy)
                response = HTTPProblem.serverBusy.response
                reportRejected(HTTPProblem.serverBusy, id: id, on: connection)
            }
        }
        // The result is delivered under the loop's `ownership`, which this thread holds until it has
        // returned, so appending the slot after `submit` (or keeping the job) cannot race with it.
        connection.pending.append(
            Connection.PendingResponse(
                sequence: sequence,
                requestID: id,
                omitBody: head.method == "HEAD",
                isHTTP10: head.version == .http1_0,
                keepAlive: keepAlive,
                response: response
            )
        )
    }

    /// Moves finished responses at the front of the queue to the output buffer, in request order.
    private func encodeReadyResponses(_ connection: Connection, now: UInt64) {
        while let first = connection.pending.first, var response = first.response {
            connection.pending.removeFirst()
            if let reason = ResponseEncoder.validationFailure(response) {
                context.report(.invalidResponse(requestID: first.requestID, reason: reason))
                response = HTTPProblem.internalError.response
            }
            let isLast = connection.pending.isEmpty
            // A handler may end the connection by answering `Connection: close`.
            let close =
                !first.keepAlive || (isLast && isDraining && connection.parser.isIdle)
                || response.headers.containsToken("close", inField: "Connection")
            ResponseEncoder.encode(
                response,
                framing: .init(
                    omitBody: first.omitBody,
                    close: close,
                    confirmKeepAlive: first.isHTTP10 && !close,
                    requestID: first.requestID
                ),
                date: currentDate(),
                into: &connection.output
            )
            if close {
                connection.closeAfterOutput = true
                connection.pending.removeAll()
                connection.phase = .closingAfterResponses
                return
            }
            if isLast {
                // Back to waiting for the client: its clock restarts now, not while we were busy.
                connection.idleSince = now
                if connection.requestStartedAt != nil {
                    connection.requestStartedAt = now
                }
            }
        }
    }

    /// Queues the server's own final answer to a request the handler never sees (after which
    /// nothing else is read; the connection closes once it is out), and reports it with its id.
    func answerAndClose(_ connection: Connection, with problem: HTTPProblem) {
        let id = takeRequestID(connection)
        connection.pending.append(
            Connection.PendingResponse(
                sequence: connection.nextSequence,
                requestID: id,
                omitBody: false,
                isHTTP10: false,
                keepAlive: false,
                response: problem.response
            )
        )
        connection.nextSequence &+= 1
        connection.phase = .closingAfterResponses
        reportRejected(problem, id: id, on: connection)
    }

    /// The id of the request being answered: the one its `100 Continue` already carried, or a new one.
    private func takeRequestID(_ connection: Connection) -> HTTPRequestID {
        defer { connection.reservedRequestID = nil }
        return connection.reservedRequestID ?? nextRequestID()
    }

    private func reportRejected(_ problem: HTTPProblem, id: HTTPRequestID, on connection: Connection) {
        context.report(
            .requestRejected(requestID: id, status: problem.status, slug: problem.slug, client: connection.client)
        )
    }

    /// Writes as much output as the socket takes. Returns false if the connection was closed.
    @discardableResult
    func writeOutput(_ connection: Connection, now: UInt64) -> Bool {
        guard !connection.isClosed else { return false }
        while connection.hasUnsentOutput {
            let offset = connection.outputOffset
            let sent = connection.output.withUnsafeBytes { bytes in
                send(connection.fd, bytes.baseAddress! + offset, bytes.count - offset, csystem_MSG_NOSIGNAL)
            }
            if sent > 0 {
                connection.outputOffset += sent
                continue
            }
            let number = errno
            if sent < 0 && (number == EAGAIN || number == EWOULDBLOCK) {
                if connection.writeBlockedSince == nil { connection.writeBlockedSince = now }
                updateInterest(connection)
                return true
            }
            if sent < 0 && number == EINTR { continue }
            close(connection)
            return false
        }
        if !connection.output.isEmpty {
            // Keep a typical buffer for the next response; drop one grown by a large body.
            connection.output.removeAll(keepingCapacity: connection.output.capacity <= 16 * 1024)
            connection.outputOffset = 0
        }
        connection.writeBlockedSince = nil
        if connection.closeAfterOutput {
            if connection.peerClosedWrite {
                close(connection)
                return false
            }
            beginLingering(connection, now: now)
            return !connection.isClosed
        }
        if connection.peerClosedWrite && connection.pending.isEmpty {
            // The client half-closed and everything it asked for is answered.
            close(connection)
            return false
        }
        if isDraining && connection.isWaitingForClient && connection.parser.isIdle {
            close(connection)
            return false
        }
        return true
    }

    private func beginLingering(_ connection: Connection, now: UInt64) {
        shutdown(connection.fd, Int32(SHUT_WR))
        connection.phase = .lingering(deadline: now &+ context.lingerTimeout, drained: 0)
        connection.closeAfterOutput = false
        updateInterest(connection)
        // What the client sent before is already waiting, and no new edge would announce it.
        if !connection.isClosed { drainLingering(connection) }
    }

    private func drainLingering(_ connection: Connection) {
        while !connection.isClosed, case .lingering(let deadline, let drained) = connection.phase {
            guard let count = receive(connection) else { return }
            let total = drained + count
            if count == 0 || total >= context.configuration.lingerMaxBytes {
                close(connection)
                return
            }
            connection.phase = .lingering(deadline: deadline, drained: total)
            if count < scratch.count { return }
        }
    }

    /// Registers exactly the events the connection can act on: reading only while it may take more
    /// requests (this is the pipelining backpressure), writing only while output is unsent.
    func updateInterest(_ connection: Connection) {
        guard !connection.isClosed else { return }
        var wanted: UInt32 = 0
        switch connection.phase {
        case .open:
            if !connection.peerClosedWrite && connection.pending.count < context.configuration.maxPipelinedRequests {
                wanted |= csystem_EPOLLIN
            }
        case .closingAfterResponses:
            break
        case .lingering:
            wanted |= csystem_EPOLLIN
        }
        if connection.hasUnsentOutput {
            wanted |= csystem_EPOLLOUT
        }
        guard wanted != connection.interest else { return }
        // Re-arming reports at once what is already readable or writable, as a new edge would.
        let events = wanted | csystem_EPOLLET
        if csystem_epoll_ctl(epollFD, csystem_EPOLL_CTL_MOD, connection.fd, events, connection.id) == 0 {
            connection.interest = wanted
        } else {
            close(connection)
        }
    }

    func close(_ connection: Connection) {
        guard !connection.isClosed else { return }
        connection.isClosed = true
        Glibc.close(connection.fd)
        forget(connection)
        context.openConnections.wrappingSubtract(1, ordering: .relaxed)
        context.release(clientKey: connection.clientKey)
        LoopCounters.increment(counters.closed)
    }
}
