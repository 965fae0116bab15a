import Dispatch
import Foundation
import Glibc
import Testing

@testable import HTTPCore
@testable import UpgradeAPI

/// The server over real loopback sockets. Each test starts its own server on a free port and stops it.
@Suite("HTTPServer")
struct HTTPServerTests {
    @Test("a keep-alive connection serves requests one after another with Date, Content-Length and Content-Type")
    func keepAlive() throws {
        let server = try TestServer()
        defer { #expect(server.stop()) }
        let client = try server.client()
        var ids: Set<String> = []
        var inOrder: [UInt64] = []
        for _ in 0..<3 {
            try client.send("GET /hello HTTP/1.1\r\nHost: test\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 200 && response.text == "hello")
            #expect(response.header("Date")?.hasSuffix(" GMT") == true)
            #expect(response.header("Content-Length") == "5")
            #expect(response.header("Content-Type") == "text/plain; charset=utf-8")
            #expect(response.header("Connection") == nil)
            if let id = response.requestID {
                ids.insert(id)
                inOrder.append(try #require(UInt64(id, radix: 16), "X-Request-Id \(id) is 16 hex digits"))
            }
        }
        #expect(ids.count == 3, "each response carries its own X-Request-Id")
        // Not a counter: one that counted up would tell a client how busy the server is.
        for (earlier, later) in zip(inOrder, inOrder.dropFirst()) {
            let gap = later > earlier ? later - earlier : earlier - later
            #expect(gap > 1 << 20, "successive ids \(earlier) and \(later) are \(gap) apart")
        }
        #expect(server.server.statistics.requestsReceived == 3)
        #expect(server.server.statistics.connectionsAccepted == 1)
    }

    @Test("idle connections are closed silently: after keepAliveTimeout, or a request deadline with no byte sent")
    func idleConnections() throws {
        let server = try TestServer {
            $0.keepAliveTimeout = .milliseconds(300)
            $0.requestTimeout = .seconds(1)
        }
        defer { #expect(server.stop()) }
        let used = try server.client()
        try used.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try used.readResponse().status == 200)
        #expect(try used.readUntilClosed().isEmpty, "no 408 for a connection between requests")
        let silent = try server.client()
        #expect(try silent.readUntilClosed().isEmpty, "no 408 for a connection that never sent a byte")
        #expect(server.server.statistics.requestsTimedOut == 0)
    }

    @Test("a new connection that sends nothing is closed after firstByteTimeout, long before requestTimeout")
    func firstByteTimeout() throws {
        let server = try TestServer {
            $0.firstByteTimeout = .milliseconds(300)
            $0.requestTimeout = .seconds(60)
        }
        defer { #expect(server.stop()) }
        let started = try server.client()
        try started.send("GET /hel")
        let silent = try server.client()
        // The client's 10 s receive timeout is far below the 60 s request deadline.
        #expect(try silent.readUntilClosed().isEmpty, "closed without an answer")
        // The connection that sent a byte in time is still served.
        try started.send("lo HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try started.readResponse().text == "hello")
        #expect(server.server.statistics.connectionsClosedBeforeFirstByte == 1)
        #expect(server.server.statistics.requestsTimedOut == 0)
    }

    @Test("a client that does not read its response is closed after writeTimeout")
    func slowReader() throws {
        let server = try TestServer { $0.writeTimeout = .seconds(1) }
        defer { #expect(server.stop()) }
        let client = try server.client()
        try client.send("GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
        // The request is received (so the connection is counted) before waiting for the close.
        var polls = 0
        while server.server.statistics.requestsReceived == 0 && polls < 200 {
            usleep(10_000)
            polls += 1
        }
        polls = 0
        while server.server.statistics.connectionsOpen > 0 && polls < 200 {
            usleep(50_000)
            polls += 1
        }
        #expect(server.server.statistics.connectionsOpen == 0, "closed within 10 s")
    }

    @Test("pipelined responses leave in request order even when workers finish out of order")
    func pipeliningOrder() throws {
        let server = try TestServer { $0.workerCount = 3 }
        defer { #expect(server.stop()) }
        let client = try server.client()
        try client.send(
            "GET /sleep?ms=300&tag=first HTTP/1.1\r\nHost: t\r\n\r\n"
                + "GET /sleep?ms=0&tag=second HTTP/1.1\r\nHost: t\r\n\r\n"
                + "GET /inline HTTP/1.1\r\nHost: t\r\n\r\n"
                + "GET /sleep?ms=100&tag=last HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
        )
        var bodies: [String] = []
        for _ in 0..<4 { bodies.append(try client.readResponse().text) }
        #expect(bodies == ["first", "second", "inline", "last"])
        try client.readUntilClosed()
    }

    @Test(
        "a response is not written before its notBefore, and later pipelined responses wait behind it",
        arguments: [1, 2]
    )
    func heldResponse(threadsPerEventLoop: Int) throws {
        let server = try TestServer { $0.threadsPerEventLoop = threadsPerEventLoop }
        defer { #expect(server.stop()) }
        let client = try server.client()
        let sent = ContinuousClock.now
        try client.send(
            "GET /held?ms=400&tag=held HTTP/1.1\r\nHost: t\r\n\r\n" + "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n"
        )
        #expect(try client.readResponse().text == "held")
        // A lower bound only: the response cannot leave before the instant the handler set.
        #expect(ContinuousClock.now - sent >= .milliseconds(400))
        #expect(try client.readResponse().text == "hello", "in request order")
        try client.send("GET /held?ms=0&tag=due HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(try client.readResponse().text == "due", "an instant already past is written at once")
    }

    @Test("a held response ties up no worker: with one worker, another client is answered while it waits")
    func heldResponseFreesTheWorker() throws {
        let server = try TestServer {
            $0.eventLoopCount = 1
            $0.workerCount = 1
        }
        defer { #expect(server.stop()) }
        let held = try server.client()
        try held.send("GET /held?ms=4000&tag=held HTTP/1.1\r\nHost: t\r\n\r\n")
        let other = try server.client()
        try other.send("GET /sleep?ms=0&tag=other HTTP/1.1\r\nHost: t\r\n\r\n")
        // Had the worker slept through the hold, this answer would come after the held one.
        #expect(try other.readResponse().text == "other")
        #expect(!held.isReadable(withinMilliseconds: 0), "the held response is still held")
        #expect(try held.readResponse().text == "held")
    }

    @Test("a result for a connection reset while its request ran never reaches a connection that reuses the descriptor")
    func resultForResetConnectionIsDropped() throws {
        // One loop, so the next connection lands in the same table and usually gets the same
        // descriptor number; workers deliver results themselves while the loop sleeps.
        let server = try TestServer {
            $0.eventLoopCount = 1
            $0.workerCount = 2
        }
        defer { #expect(server.stop()) }
        for round in 0..<15 {
            do {
                let abandoned = try server.client()
                try abandoned.send("GET /sleep?ms=40&tag=abandoned\(round) HTTP/1.1\r\nHost: t\r\n\r\n")
                // Reset only once the server has the request (a worker then sleeps on it): a
                // reset that came first would discard it unread, and nothing would be tested.
                let deadline = ContinuousClock.now + .seconds(5)
                while server.server.statistics.requestsReceived < 2 * round + 1 && ContinuousClock.now < deadline {
                    usleep(500)
                }
                abandoned.resetOnClose()
            }
            // The loop sees the reset and closes that descriptor while the worker still sleeps.
            usleep(5_000)
            let next = try server.client()
            try next.send("GET /sleep?ms=60&tag=next\(round) HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(try next.readResponse().text == "next\(round)")
            #expect(!next.isReadable(withinMilliseconds: 20), "nothing but its own answer arrives")
        }
        #expect(server.server.statistics.requestsReceived == 30)
    }

    @Test(
        "with many clients pipelining, resetting and reconnecting, each response reaches its own request, in order",
        arguments: [1, 2]
    )
    func concurrentDelivery(threadsPerEventLoop: Int) throws {
        // Workers deliver directly while a loop sleeps and through the mailbox while it is busy;
        // both paths run here, many times, on two loops; with two threads per loop, loop threads
        // also run requests and deliver their own results.
        let server = try TestServer {
            $0.eventLoopCount = 2
            $0.threadsPerEventLoop = threadsPerEventLoop
            $0.workerCount = 3
        }
        defer { #expect(server.stop()) }
        let clients = 8
        let port = server.port
        let failures = Locked<[String]>([])
        let finished = DispatchSemaphore(value: 0)
        for client in 0..<clients {
            Thread.detachNewThread {
                defer { finished.signal() }
                do {
                    var connection = try TestClient(port: port)
                    for round in 0..<40 {
                        let tags = (0..<(1 + (client + round) % 3)).map { "c\(client)-r\(round)-\($0)" }
                        // Every 13th round walks away while its answers are still being computed
                        // (slowly, so the reset is seen and the descriptor reused before they finish).
                        let abandon = round % 13 == 12
                        var batch = ""
                        for (index, tag) in tags.enumerated() {
                            let milliseconds = abandon ? 20 : (round + index) % 3
                            batch += "GET /sleep?ms=\(milliseconds)&tag=\(tag) HTTP/1.1\r\nHost: t\r\n\r\n"
                        }
                        try connection.send(batch)
                        if abandon {
                            usleep(2_000)
                            connection.resetOnClose()
                            connection = try TestClient(port: port)
                            continue
                        }
                        for tag in tags {
                            let text = try connection.readResponse().text
                            if text != tag { failures.withLock { $0.append("\(tag) got \(text)") } }
                        }
                    }
                } catch {
                    failures.withLock { $0.append("client \(client): \(error)") }
                }
            }
        }
        for _ in 0..<clients { #expect(finished.wait(timeout: .now() + 60) == .success) }
        #expect(failures.withLock { $0 } == [])
    }

    @Test("more pipelined requests than the per-connection limit are all answered, also after a half-close")
    func pipeliningBeyondTheLimit() throws {
        let server = try TestServer { $0.maxPipelinedRequests = 2 }
        defer { #expect(server.stop()) }
        let client = try server.client()
        var batch = ""
        for index in 0..<10 {
            batch +=
                index % 3 == 0
                ? "GET /inline HTTP/1.1\r\nHost: t\r\n\r\n" : "GET /sleep?tag=\(index) HTTP/1.1\r\nHost: t\r\n\r\n"
        }
        try client.send(batch)
        // The client is done sending; the server must still answer everything, then close.
        shutdown(client.fd, Int32(SHUT_WR))
        var bodies: [String] = []
        for _ in 0..<10 { bodies.append(try client.readResponse().text) }
        #expect(bodies == (0..<10).map { $0 % 3 == 0 ? "inline" : "\($0)" })
        #expect(try client.readUntilClosed().isEmpty)
    }

    @Test("when every worker is busy and the queue is at its memory cap, the next request gets 503 with Retry-After")
    func fullQueue() throws {
        let handler = TestHandler()
        let server = try oneLoopServer(handler, threadsPerEventLoop: 1)
        defer { #expect(server.stop()) }
        let running = try blockedClient(server)
        #expect(handler.gate.waitUntilEntered(), "the only worker took the first request")
        let queued = try blockedClient(server)
        #expect(waitForQueue(server, depth: 1))

        let refused = try blockedClient(server)
        let busy = try refused.readResponse()
        #expect(busy.status == 503)
        #expect(busy.header("Retry-After") == "1")
        #expect(busy.header("Content-Type") == "application/problem+json")
        #expect(busy.problemSlug == "server-busy")
        let busyID = try #require(busy.requestID, "the 503 carries an X-Request-Id")
        #expect(server.events.contains("request \(busyID): answered 503 server-busy to 127.0.0.1"))

        handler.gate.open(2)
        #expect(try running.readResponse().text == "released")
        #expect(try queued.readResponse().text == "released")
        // A busy answer is not a protocol error: the connection stays usable.
        try refused.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(try refused.readResponse().status == 200)
        #expect(server.server.statistics.requestsRefusedBusy == 1)
        #expect(server.server.statistics.requestsHandledByLoopThreads == 0)
    }

    @Test("with one blocked worker, requests beyond the old count limit of 64 wait and are served, not refused")
    func queueBeyondCount() throws {
        let handler = TestHandler()
        let server = try TestServer(handler: handler) {
            $0.eventLoopCount = 1
            $0.workerCount = 1
            $0.maxQueueDelay = .seconds(60)
            $0.maxConnectionsPerClient = 1024
        }
        defer { #expect(server.stop()) }
        let running = try blockedClient(server)
        #expect(handler.gate.waitUntilEntered(), "the only worker took the first request")
        var queued: [TestClient] = []
        for _ in 0..<99 { queued.append(try blockedClient(server)) }
        #expect(waitForQueue(server, depth: 99))
        #expect(server.server.statistics.requestsRefusedBusy == 0)

        handler.gate.open(100)
        for client in [running] + queued {
            #expect(try client.readResponse().text == "released")
        }
        let statistics = server.server.statistics
        #expect(statistics.requestsRefusedBusy == 0)
        #expect(statistics.requestsDequeued == 100)
        #expect(statistics.queuedRequests == 0)
    }

    @Test("a request is refused 503 server-busy once the oldest queued request has waited past maxQueueDelay")
    func shedByDelay() throws {
        let handler = TestHandler()
        let server = try TestServer(handler: handler) {
            $0.eventLoopCount = 1
            $0.workerCount = 1
            $0.maxQueueDelay = .milliseconds(50)
        }
        defer { #expect(server.stop()) }
        let running = try blockedClient(server)
        #expect(handler.gate.waitUntilEntered(), "the only worker took the first request")
        let queued = try blockedClient(server)
        #expect(waitForQueue(server, depth: 1))
        // Waits until the queued request is past the bound, however long that takes: a new request
        // is read after that, so it finds the oldest one older than the bound.
        #expect(waitForOldestWait(server, longerThan: .milliseconds(50)))

        let refused = try blockedClient(server)
        let busy = try refused.readResponse()
        #expect(busy.status == 503)
        #expect(busy.header("Retry-After") == "1")
        #expect(busy.problemSlug == "server-busy")
        #expect(server.server.statistics.queuedRequests == 1, "the waiting request keeps its place")

        handler.gate.open(2)
        #expect(try running.readResponse().text == "released")
        #expect(try queued.readResponse().text == "released")
        // The queue drained: a new request is queued and served again.
        try refused.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(try refused.readResponse().text == "hello")
        let statistics = server.server.statistics
        #expect(statistics.requestsRefusedBusy == 1)
        #expect(statistics.queueWaitMaximum > .milliseconds(50))
        #expect(statistics.queueWaitTotal >= statistics.queueWaitMaximum)
    }

    @Test("a loop thread runs the request it read while another thread of its loop stays on watch")
    func loopThreadKeepsRequest() throws {
        let handler = TestHandler()
        let server = try oneLoopServer(handler, threadsPerEventLoop: 2)
        defer { #expect(server.stop()) }
        // The thread this request wakes keeps it; its sibling is left watching the loop.
        let first = try blockedClient(server)
        #expect(handler.gate.waitUntilEntered())
        #expect(server.server.statistics.requestsHandledByLoopThreads == 1)
        #expect(server.server.statistics.queuedRequests == 0)

        // The sibling must not keep one too (nobody would watch the loop): the worker takes it.
        let second = try blockedClient(server)
        #expect(handler.gate.waitUntilEntered())
        let third = try blockedClient(server)
        #expect(waitForQueue(server, depth: 1))
        let fourth = try blockedClient(server)
        #expect(try fourth.readResponse().status == 503)
        // With both handlers blocked, the loop still answers: the watching thread reads and writes.
        try fourth.send("GET /inline HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(try fourth.readResponse().text == "inline")
        #expect(server.server.statistics.requestsHandledByLoopThreads == 1)

        handler.gate.open(3)
        for client in [first, second, third] {
            #expect(try client.readResponse().text == "released")
        }
        // Released, the loop thread keeps requests again: sequential requests need no worker. Each
        // is sent as soon as the answer before it arrives, so the thread that answered must count
        // itself out of `loopThreadsHandling` before its response leaves, not after.
        for _ in 0..<20 {
            try first.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(try first.readResponse().text == "hello")
        }
        #expect(server.server.statistics.requestsHandledByLoopThreads == 21)
        #expect(server.server.statistics.requestsRefusedBusy == 1)
    }

    /// One loop of `threads` threads, one worker and room for one queued request: easy to fill.
    private func oneLoopServer(_ handler: TestHandler, threadsPerEventLoop threads: Int) throws -> TestServer {
        try TestServer(handler: handler) {
            $0.eventLoopCount = 1
            $0.threadsPerEventLoop = threads
            $0.workerCount = 1
            $0.workerQueueCapacity = 1
        }
    }

    /// A new connection whose `GET /block` waits in the handler until the test opens the gate.
    private func blockedClient(_ server: TestServer) throws -> TestClient {
        let client = try server.client()
        try client.send("GET /block HTTP/1.1\r\nHost: t\r\n\r\n")
        return client
    }

    /// Polls until `depth` requests wait in the worker queue (at most 5 s).
    private func waitForQueue(_ server: TestServer, depth: Int) -> Bool {
        for _ in 0..<500 {
            if server.server.statistics.queuedRequests >= depth { return true }
            usleep(10_000)
        }
        return false
    }

    /// Polls until the oldest queued request has waited longer than `bound` (at most 5 s).
    private func waitForOldestWait(_ server: TestServer, longerThan bound: Duration) -> Bool {
        for _ in 0..<500 {
            if server.server.statistics.oldestQueuedWait > bound { return true }
            usleep(10_000)
        }
        return false
    }

    static let hostileShapes: [MalformedShape] = [
        MalformedShape("bare LF", "GET / HTTP/1.1\nHost: x\n\n", 400, "bare-lf"),
        MalformedShape("obs-fold", "GET / HTTP/1.1\r\nHost: x\r\nX-A: a\r\n\tb\r\n\r\n", 400, "obs-fold"),
        MalformedShape(
            "Transfer-Encoding with Content-Length",
            "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n",
            400,
            "content-length-with-transfer-encoding"
        ),
        MalformedShape(
            "Content-Length 2 and 3",
            "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc",
            400,
            "duplicate-content-length"
        ),
        MalformedShape(
            "Content-Length 1x",
            "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1x\r\n\r\na",
            400,
            "invalid-content-length"
        ),
        MalformedShape("missing Host", "GET / HTTP/1.1\r\n\r\n", 400, "missing-host"),
        MalformedShape("whitespace before colon", "GET / HTTP/1.1\r\nHost : x\r\n\r\n", 400, "whitespace-before-colon"),
        MalformedShape("HTTP/2.0", "GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505, "unsupported-http-version"),
        MalformedShape(
            "100 KB header line",
            "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + String(repeating: "a", count: 100_000) + "\r\n\r\n",
            431,
            "header-section-too-large"
        ),
        MalformedShape(
            "unsupported transfer coding",
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n",
            501,
            "unsupported-transfer-encoding"
        ),
    ]

    @Test("each malformed shape gets its problem document and the connection is closed", arguments: hostileShapes)
    func malformedRequest(_ shape: MalformedShape) throws {
        let server = try TestServer()
        defer { #expect(server.stop()) }
        let client = try server.client()
        // A valid request first: the error must come after its answer, on the same connection.
        try client.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n" + shape.request)
        let valid = try client.readResponse()
        #expect(valid.status == 200)
        let response = try client.readResponse()
        #expect(response.status == shape.status, "\(shape.name)")
        #expect(response.problemSlug == shape.slug, "\(shape.name)")
        let id = try #require(response.requestID, "\(shape.name): the error carries an X-Request-Id")
        #expect(id != valid.requestID, "\(shape.name): a fresh id, not the previous request's")
        #expect(
            server.events.contains("request \(id): answered \(shape.status) \(shape.slug)"),
            "\(shape.name): the server's event names the same id"
        )
        #expect(response.header("Content-Type") == "application/problem+json")
        #expect(response.header("Connection") == "close")
        #expect(response.text.contains("\"status\":\(shape.status)"))
        #expect(try client.readUntilClosed().isEmpty, "\(shape.name): nothing may follow the error")
        #expect(server.server.statistics.requestsMalformed == 1)
    }

    @Test("a 10 MB body is refused with 413 without the server reading it")
    func oversizedBody() throws {
        let server = try TestServer()
        defer { #expect(server.stop()) }
        let client = try server.client()
        let total = 10 * 1024 * 1024
        try client.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: \(total)\r\n\r\n")
        // Send the body from another thread, as a client that does not wait for an answer would.
        let sent = Locked(0)
        let finished = DispatchSemaphore(value: 0)
        let fd = client.fd
        DispatchQueue.global().async {
            let chunk = [UInt8](repeating: 0x61, count: 64 * 1024)
            while sent.withLock({ $0 }) < total {
                let count = chunk.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                guard count > 0 else { break }
                sent.withLock { $0 += count }
            }
            finished.signal()
        }
        let response = try client.readResponse()
        #expect(response.status == 413 && response.problemSlug == "body-too-large")
        #expect(response.header("Connection") == "close")
        try client.readUntilClosed()
        #expect(finished.wait(timeout: .now() + 10) == .success, "the server closed before the body was sent")
        #expect(sent.withLock { $0 } < total, "sending stopped early because the server closed")
        let read = server.server.statistics.bytesRead
        #expect(read < 1024 * 1024, "the server read only a bounded drain, \(read) bytes")
    }

    @Test("150 slow connections do not stop /healthz, and the deadline closes every one of them")
    func slowConnectionsAndHealth() throws {
        let server = try TestServer {
            $0.requestTimeout = .seconds(4)
            $0.maxConnectionsPerClient = 200
        }
        defer { #expect(server.stop()) }
        var slow: [TestClient] = []
        for index in 0..<150 {
            let client = try server.client()
            try client.send("POST /echo HTTP/1.1\r\nHost: x\r\nX-Slow-\(index): still typ")
            slow.append(client)
        }
        for _ in 0..<20 {
            let health = try server.client()
            try health.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            let response = try health.readResponse()
            #expect(response.status == 200 && response.text == "{\"status\":\"ok\"}")
        }
        #expect(server.server.statistics.connectionsOpen >= 150, "the slow connections were held open meanwhile")
        for client in slow {
            let response = try client.readResponse()
            #expect(response.status == 408 && response.problemSlug == "request-timeout")
            #expect(response.requestID.map { server.events.contains("request \($0): answered 408") } == true)
            try client.readUntilClosed()
        }
        #expect(server.server.statistics.requestsTimedOut == 150)
    }

    @Test("a client trickling its headers is answered 408 and closed by the total deadline")
    func tricklingHeaders() throws {
        let server = try TestServer { $0.requestTimeout = .seconds(1) }
        defer { #expect(server.stop()) }
        let client = try server.client()
        try client.send("GET /hello HTTP/1.1\r\nHost: x\r\nX-Trickle: ")
        try trickle(client)
        let response = try client.readResponse()
        #expect(response.status == 408)
        try client.readUntilClosed()
    }

    @Test("a client trickling its body is answered 408 and closed by the total deadline")
    func tricklingBody() throws {
        let server = try TestServer { $0.requestTimeout = .seconds(1) }
        defer { #expect(server.stop()) }
        let client = try server.client()
        try client.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
        try trickle(client)
        let response = try client.readResponse()
        #expect(response.status == 408)
        try client.readUntilClosed()
    }

    /// Sends a byte every 100 ms until the server answers; fails if it has not within 10 s.
    private func trickle(_ client: TestClient) throws {
        for _ in 0..<100 {
            if client.isReadable(withinMilliseconds: 100) { return }
            do { try client.send("a") } catch { return }
        }
        Issue.record("the server did not answer a trickling client within 10 s")
    }

    @Test("graceful shutdown finishes the in-flight request, closes idle connections, then stops")
    func gracefulShutdown() throws {
        let handler = TestHandler()
        let server = try TestServer(handler: handler)
        let busy = try blockedClient(server)
        #expect(handler.gate.waitUntilEntered())
        let idle = try server.client()
        try idle.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try idle.readResponse().status == 200)

        server.server.shutdown()
        try idle.readUntilClosed()
        handler.gate.open()
        let response = try busy.readResponse()
        #expect(response.status == 200 && response.text == "released")
        #expect(response.header("Connection") == "close")
        try busy.readUntilClosed()
        #expect(server.stop(), "the server stopped once the request was answered")
        #expect(throws: TestClient.Failure.self, "the listener is closed") { try server.client() }
        #expect(server.events.contains("graceful shutdown started"))
    }

    @Test("HTTP/1.0 is closed after the response unless it asks for keep-alive")
    func http10() throws {
        let server = try TestServer()
        defer { #expect(server.stop()) }
        let plain = try server.client()
        try plain.send("GET /hello HTTP/1.0\r\n\r\n")
        let response = try plain.readResponse()
        #expect(response.status == 200 && response.header("Connection") == "close")
        try plain.readUntilClosed()

        let kept = try server.client()
        for _ in 0..<2 {
            try kept.send("GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            let answer = try kept.readResponse()
            #expect(answer.status == 200 && answer.header("Connection") == "keep-alive")
        }
    }

    @Test("a handler that throws, or returns a header with CR LF, yields a bare 500 and an event")
    func handlerFailures() throws {
        let server = try TestServer()
        defer { #expect(server.stop()) }
        let client = try server.client()
        try client.send("GET /throw HTTP/1.1\r\nHost: x\r\n\r\n")
        let thrown = try client.readResponse()
        #expect(thrown.status == 500 && thrown.problemSlug == "internal-error")
        #expect(thrown.requestID.map { server.events.contains("request \($0): handler failed") } == true)
        #expect(!thrown.text.contains("TestFailure"), "the error itself is never echoed")
        try client.send("GET /split HTTP/1.1\r\nHost: x\r\n\r\n")
        let split = try client.readResponse()
        #expect(split.status == 500 && split.header("Set-Cookie") == nil && split.header("X-Injected") == nil)
        #expect(split.requestID.map { server.events.contains("request \($0): invalid response") } == true)
        try client.send("GET /missing HTTP/1.1\r\nHost: x\r\n\r\n")
        let missing = try client.readResponse()
        #expect(missing.status == 404 && missing.problemSlug == "not-found", "a thrown HTTPProblem is sent as is")
        #expect(server.events.contains("handler failed"))
        #expect(server.events.contains("invalid response"))
    }

    @Test("a handler ends the connection by answering Connection: close")
    func handlerCloses() throws {
        let server = try TestServer()
        defer { #expect(server.stop()) }
        let client = try server.client()
        try client.send("GET /close HTTP/1.1\r\nHost: x\r\n\r\nGET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 200 && response.text == "bye" && response.header("Connection") == "close")
        #expect(try client.readUntilClosed().isEmpty, "the pipelined request after it is not answered")
    }

    @Test("HEAD gets the headers of GET without the body")
    func head() throws {
        let server = try TestServer()
        defer { #expect(server.stop()) }
        let client = try server.client()
        try client.send("HEAD /hello HTTP/1.1\r\nHost: x\r\n\r\nGET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        var buffer: [UInt8] = []
        while TestClient.find(Array("hello".utf8), in: buffer) == nil {
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = chunk.withUnsafeMutableBytes { recv(client.fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            buffer.append(contentsOf: chunk[..<count])
        }
        let text = String(decoding: buffer, as: UTF8.self)
        let responses = text.components(separatedBy: "HTTP/1.1 200 OK").filter { !$0.isEmpty }
        #expect(responses.count == 2)
        #expect(responses.first?.hasSuffix("Content-Length: 5\r\n\r\n") == true, "HEAD has a length and no body")
        #expect(responses.last?.hasSuffix("\r\n\r\nhello") == true)
    }

    @Test("Expect: 100-continue gets an interim 100 before the body is sent")
    func expectContinue() throws {
        let server = try TestServer()
        defer { #expect(server.stop()) }
        let client = try server.client()
        try client.send("POST /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
        let interim = try client.readResponse()
        #expect(interim.status == 100)
        try client.send("hello")
        let response = try client.readResponse()
        #expect(response.status == 200 && response.text == "hello")
        #expect(interim.requestID != nil && interim.requestID == response.requestID, "one request, one id")
    }

    @Test("a chunked request body reaches the handler decoded")
    func chunkedBody() throws {
        let server = try TestServer()
        defer { #expect(server.stop()) }
        let client = try server.client()
        try client.send(
            "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n"
        )
        #expect(try client.readResponse().text == "abcdefg")
    }

    @Test("beyond maxConnections a new connection gets 503 and is closed")
    func connectionCap() throws {
        let server = try TestServer { $0.maxConnections = 2 }
        defer { #expect(server.stop()) }
        let first = try server.client()
        let second = try server.client()
        for client in [first, second] {
            try client.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try client.readResponse().status == 200)
        }
        let third = try server.client()
        let refused = try third.readResponse()
        #expect(refused.status == 503 && refused.problemSlug == "connection-limit")
        try third.readUntilClosed()
        #expect(server.server.statistics.connectionsRefused == 1)
        let id = try #require(refused.requestID, "a refused connection's 503 carries an X-Request-Id")
        #expect(server.events.contains("request \(id): connection limit 2 reached"))
    }

    static let flooder: UInt32 = 0x7F00_0001
    static let otherClient: UInt32 = 0x7F00_0002

    @Test("one client's idle connections stop at maxConnectionsPerClient with a 503; other clients are still served")
    func perClientConnectionLimit() throws {
        let server = try TestServer {
            $0.maxConnections = 64
            $0.maxConnectionsPerClient = 8
            $0.firstByteTimeout = .seconds(30)
        }
        defer { #expect(server.stop()) }
        // Accepted in connection order, so the first 8 are the ones held.
        var held: [TestClient] = []
        for _ in 0..<8 { held.append(try TestClient(port: server.port, sourceHost: Self.flooder)) }
        var refusedIDs: Set<String> = []
        for _ in 0..<22 {
            let refused = try TestClient(port: server.port, sourceHost: Self.flooder)
            let response = try refused.readResponse()
            #expect(response.status == 503 && response.problemSlug == "client-connection-limit")
            #expect(response.header("Retry-After") == "1" && response.header("Connection") == "close")
            if let id = response.requestID { refusedIDs.insert(id) }
            #expect(try refused.readUntilClosed().isEmpty)
        }
        #expect(refusedIDs.count == 22, "each refusal has its own X-Request-Id")
        #expect(server.server.statistics.connectionsRefusedPerClient == 22)
        #expect(server.server.statistics.connectionsRefused == 0, "the server-wide cap was never reached")
        #expect(server.events.count(containing: "client 127.0.0.1 has 8 connections open") == 1, "reported once")

        let other = try TestClient(port: server.port, sourceHost: Self.otherClient)
        try other.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try other.readResponse().text == "hello", "another address is served meanwhile")
        try held[0].send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try held[0].readResponse().text == "hello", "the client's admitted connections are served")

        // Closing connections gives the client its slots back.
        for client in held.suffix(4) { client.resetOnClose() }
        held.removeLast(4)
        var polls = 0
        while server.server.statistics.connectionsOpen > 5 && polls < 200 {
            usleep(10_000)
            polls += 1
        }
        let again = try TestClient(port: server.port, sourceHost: Self.flooder)
        try again.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try again.readResponse().text == "hello")
    }

    @Test("peers in connectionLimitExemptPeers, such as trusted proxies, are not held to the per-client limit")
    func perClientLimitExemptsProxies() throws {
        let server = try TestServer {
            $0.maxConnectionsPerClient = 2
            $0.connectionLimitExemptPeers = TrustedProxies("127.0.0.1")!
        }
        defer { #expect(server.stop()) }
        var proxied: [TestClient] = []
        for _ in 0..<10 {
            let client = try TestClient(port: server.port, sourceHost: Self.flooder)
            try client.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try client.readResponse().text == "hello")
            proxied.append(client)
        }
        var direct: [TestClient] = []
        for _ in 0..<2 { direct.append(try TestClient(port: server.port, sourceHost: Self.otherClient)) }
        let refused = try TestClient(port: server.port, sourceHost: Self.otherClient)
        #expect(try refused.readResponse().problemSlug == "client-connection-limit", "a peer not listed is held to it")
        #expect(server.server.statistics.connectionsRefusedPerClient == 1)
    }

    @Test("a second server on a taken port refuses to start with a clear error")
    func portInUse() throws {
        let first = try TestServer()
        defer { #expect(first.stop()) }
        do {
            _ = try TestServer { $0.port = first.port }
            Issue.record("the second server started on a taken port")
        } catch let error as HTTPServerError {
            #expect(error.code == .addressInUse)
            #expect(error.message.contains("already in use"))
        }
    }

    @Test("invalid configuration is refused before binding")
    func invalidConfiguration() {
        var configuration = HTTPServer.Configuration()
        configuration.port = 0
        configuration.workerQueueCapacity = 0
        let server = HTTPServer(configuration: configuration, handler: TestHandler())
        #expect(throws: HTTPServerError.self) { try server.start() }
    }
}
