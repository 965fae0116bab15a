import Testing

@testable import UpgradeAPI

/// The parser alone: every decision must be the same however the bytes are split.
@Suite("HTTPRequestParser")
struct HTTPRequestParserTests {
    typealias Event = HTTPRequestParser.Event

    /// Feeds `bytes` in pieces of `sizes` (cycled) and collects every event, leaving out
    /// `continueExpected`, which legitimately depends on the split.
    static func parse(
        _ bytes: [UInt8],
        pieces sizes: [Int]? = nil,
        limits: HTTPRequestParser.Limits = HTTPRequestParser.Limits()
    ) -> [Event] {
        var parser = HTTPRequestParser(limits: limits)
        var events: [Event] = []
        func drain() {
            while let event = parser.next() {
                if event != .continueExpected { events.append(event) }
            }
        }
        guard let sizes else {
            parser.append(bytes)
            drain()
            return events
        }
        var offset = 0
        var turn = 0
        while offset < bytes.count {
            let size = max(1, sizes[turn % sizes.count])
            let end = min(bytes.count, offset + size)
            parser.append(bytes[offset..<end])
            drain()
            offset = end
            turn += 1
        }
        return events
    }

    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    static let pipelined = bytes(
        "GET /a?x=1 HTTP/1.1\r\nHost: example.test\r\nAccept: */*\r\n\r\n"
            + "POST /upgrades HTTP/1.1\r\nHost: example.test\r\nContent-Type: application/json\r\n"
            + "Content-Length: 13\r\n\r\n{\"user\":\"ab\"}"
            + "PUT /chunked HTTP/1.1\r\nHost: example.test\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "5;name=value\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n"
            + "\r\nGET / HTTP/1.0\r\n\r\n"
    )

    @Test("yields pipelined requests in order with their bodies")
    func pipelinedRequests() throws {
        let events = Self.parse(Self.pipelined)
        #expect(events.count == 4)
        guard case .request(let first, let firstBody) = events[0],
            case .request(let second, let secondBody) = events[1],
            case .request(let third, let thirdBody) = events[2],
            case .request(let fourth, let fourthBody) = events[3]
        else {
            Issue.record("expected four requests, got \(events)")
            return
        }
        #expect(first.method == "GET" && first.target == "/a?x=1" && first.path == "/a" && first.query == "x=1")
        #expect(first.headers["HOST"] == "example.test", "lookup ignores case")
        #expect(first.headers.fields.map(\.name) == ["Host", "Accept"], "order and case are kept")
        #expect(firstBody.isEmpty)
        #expect(second.method == "POST" && secondBody == Self.bytes("{\"user\":\"ab\"}"))
        #expect(third.method == "PUT" && thirdBody == Self.bytes("hello world"), "chunked body is decoded")
        #expect(fourth.version == .http1_0 && fourthBody.isEmpty, "a leading empty line is ignored")
        #expect(first.keepAlive && !fourth.keepAlive)
    }

    @Test("feeding split at every offset yields exactly what feeding the whole does")
    func splitAtEveryOffset() {
        let whole = Self.parse(Self.pipelined)
        for offset in 1..<Self.pipelined.count {
            let split = Self.parse(Self.pipelined, pieces: [offset, Self.pipelined.count])
            #expect(split == whole, "split at \(offset)")
        }
        #expect(Self.parse(Self.pipelined, pieces: [1]) == whole, "byte by byte")
        #expect(Self.parse(Self.pipelined, pieces: [3, 1, 7, 2]) == whole, "uneven pieces")
    }

    /// Each malformed shape, its status and its slug.
    static let malformed: [MalformedShape] = [
        MalformedShape("bare LF ending the request line", "GET / HTTP/1.1\nHost: x\r\n\r\n", 400, "bare-lf"),
        MalformedShape("bare LF ending a header", "GET / HTTP/1.1\r\nHost: x\n\r\n", 400, "bare-lf"),
        MalformedShape("bare LF everywhere", "GET / HTTP/1.1\nHost: x\n\n", 400, "bare-lf"),
        MalformedShape("bare CR inside a header", "GET / HTTP/1.1\r\nHost: x\rX: y\r\n\r\n", 400, "bare-cr"),
        MalformedShape("obs-fold", "GET / HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n", 400, "obs-fold"),
        MalformedShape("whitespace before colon", "GET / HTTP/1.1\r\nHost : x\r\n\r\n", 400, "whitespace-before-colon"),
        MalformedShape(
            "tab before colon",
            "GET / HTTP/1.1\r\nHost: x\r\nX-A\t: 1\r\n\r\n",
            400,
            "whitespace-before-colon"
        ),
        MalformedShape(
            "Transfer-Encoding with Content-Length",
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
            400,
            "content-length-with-transfer-encoding"
        ),
        MalformedShape(
            "duplicate equal Content-Length",
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n",
            400,
            "duplicate-content-length"
        ),
        MalformedShape(
            "duplicate different Content-Length",
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n",
            400,
            "duplicate-content-length"
        ),
        MalformedShape(
            "Content-Length 1x",
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1x\r\n\r\n",
            400,
            "invalid-content-length"
        ),
        MalformedShape(
            "Content-Length -1",
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
            400,
            "invalid-content-length"
        ),
        MalformedShape(
            "Content-Length +1",
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +1\r\n\r\n",
            400,
            "invalid-content-length"
        ),
        MalformedShape(
            "Content-Length list",
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1, 1\r\n\r\n",
            400,
            "invalid-content-length"
        ),
        MalformedShape(
            "empty Content-Length",
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length:\r\n\r\n",
            400,
            "invalid-content-length"
        ),
        MalformedShape("missing Host on HTTP/1.1", "GET / HTTP/1.1\r\nAccept: */*\r\n\r\n", 400, "missing-host"),
        MalformedShape("two Host fields", "GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", 400, "duplicate-host"),
        MalformedShape("Host with a space inside", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400, "invalid-host"),
        MalformedShape("HTTP/2.0", "GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505, "unsupported-http-version"),
        MalformedShape("HTTP/1.2", "GET / HTTP/1.2\r\nHost: x\r\n\r\n", 505, "unsupported-http-version"),
        MalformedShape("HTTP/0.9", "GET / HTTP/0.9\r\n\r\n", 505, "unsupported-http-version"),
        MalformedShape("lowercase version", "GET / http/1.1\r\nHost: x\r\n\r\n", 400, "invalid-request-line"),
        MalformedShape(
            "two spaces in the request line",
            "GET  / HTTP/1.1\r\nHost: x\r\n\r\n",
            400,
            "invalid-request-line"
        ),
        MalformedShape("no version", "GET /\r\nHost: x\r\n\r\n", 400, "invalid-request-line"),
        MalformedShape("method with a bad character", "GE(T / HTTP/1.1\r\nHost: x\r\n\r\n", 400, "invalid-method"),
        MalformedShape("absolute-form target", "GET http://x/ HTTP/1.1\r\nHost: x\r\n\r\n", 400, "invalid-target"),
        MalformedShape("bad percent escape", "GET /%zz HTTP/1.1\r\nHost: x\r\n\r\n", 400, "invalid-target"),
        MalformedShape("fragment in the target", "GET /a#b HTTP/1.1\r\nHost: x\r\n\r\n", 400, "invalid-target"),
        MalformedShape(
            "header name with a space",
            "GET / HTTP/1.1\r\nHost: x\r\nBad Name: 1\r\n\r\n",
            400,
            "invalid-header-field"
        ),
        MalformedShape(
            "header line without a colon",
            "GET / HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n",
            400,
            "invalid-header-field"
        ),
        MalformedShape("empty header name", "GET / HTTP/1.1\r\nHost: x\r\n: v\r\n\r\n", 400, "invalid-header-field"),
        MalformedShape(
            "control byte in a value",
            "GET / HTTP/1.1\r\nHost: x\r\nX: a\u{01}b\r\n\r\n",
            400,
            "invalid-header-value"
        ),
        MalformedShape(
            "Transfer-Encoding gzip",
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
            501,
            "unsupported-transfer-encoding"
        ),
        MalformedShape(
            "Transfer-Encoding twice",
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
            400,
            "invalid-transfer-encoding"
        ),
        MalformedShape(
            "Transfer-Encoding on HTTP/1.0",
            "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
            400,
            "invalid-transfer-encoding"
        ),
        MalformedShape(
            "chunk size not hex",
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            400,
            "invalid-chunked-body"
        ),
        MalformedShape(
            "chunk data too long",
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n",
            400,
            "invalid-chunked-body"
        ),
        MalformedShape(
            "bare LF after a chunk size",
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\nab\r\n",
            400,
            "bare-lf"
        ),
        MalformedShape(
            "unknown expectation",
            "GET / HTTP/1.1\r\nHost: x\r\nExpect: magic\r\n\r\n",
            417,
            "unsupported-expectation"
        ),
        MalformedShape(
            "Content-Length beyond the body limit",
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\n\r\n",
            413,
            "body-too-large"
        ),
        MalformedShape(
            "Content-Length too large to represent",
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999999\r\n\r\n",
            413,
            "body-too-large"
        ),
    ]

    @Test("each malformed shape fails with its status and slug, however it is split", arguments: malformed)
    func malformedShape(_ shape: MalformedShape) {
        let bytes = Self.bytes(shape.request)
        for pieces in [nil, [1], [2, 5]] as [[Int]?] {
            let events = Self.parse(bytes, pieces: pieces)
            guard events.count == 1, case .failure(let error) = events[0] else {
                Issue.record("\(shape.name): expected one failure, got \(events)")
                continue
            }
            #expect(error.status == shape.status, "\(shape.name)")
            #expect(error.slug == shape.slug, "\(shape.name)")
        }
    }

    @Test("an invalid UTF-8 header value is refused")
    func invalidUTF8Value() {
        let bytes = Self.bytes("GET / HTTP/1.1\r\nHost: x\r\nX-Name: ") + [0xC3, 0x28] + Self.bytes("\r\n\r\n")
        guard case .failure(let error) = Self.parse(bytes).first else {
            Issue.record("expected a failure")
            return
        }
        #expect(error.code == .invalidHeaderValue)
        let valid = Self.bytes("GET / HTTP/1.1\r\nHost: x\r\nX-Name: Zoë\r\n\r\n")
        guard case .request(let head, _) = Self.parse(valid).first else {
            Issue.record("valid UTF-8 must be accepted")
            return
        }
        #expect(head.headers["x-name"] == "Zoë")
    }

    @Test("the head limit is exact: at the limit accepted, one byte over refused with 431")
    func headLimitIsExact() {
        let limits = HTTPRequestParser.Limits(maxHeadBytes: 64, maxHeaderFields: 100, maxBodyBytes: 10)
        let prefix = "GET / HTTP/1.1\r\nHost: x\r\nX: "
        let padding = 64 - prefix.utf8.count - 4
        let atLimit = Self.bytes(prefix + String(repeating: "a", count: padding) + "\r\n\r\n")
        #expect(atLimit.count == 64)
        guard case .request = Self.parse(atLimit, limits: limits).first else {
            Issue.record("a head of exactly the limit must parse")
            return
        }
        let overLimit = Self.bytes(prefix + String(repeating: "a", count: padding + 1) + "\r\n\r\n")
        for pieces in [nil, [1]] as [[Int]?] {
            guard case .failure(let error) = Self.parse(overLimit, pieces: pieces, limits: limits).first else {
                Issue.record("one byte over must fail")
                continue
            }
            #expect(error.status == 431 && error.slug == "header-section-too-large")
        }
    }

    @Test("a head that never ends is refused once it passes the limit, without waiting for more")
    func endlessHeadIsRefusedAtTheLimit() {
        var parser = HTTPRequestParser(limits: HTTPRequestParser.Limits(maxHeadBytes: 100))
        parser.append(Self.bytes("GET / HTTP/1.1\r\nX: " + String(repeating: "a", count: 200)))
        guard case .failure(let error) = parser.next() else {
            Issue.record("expected 431 from the buffered bytes alone")
            return
        }
        #expect(error.status == 431)
    }

    @Test("the header field count limit is exact")
    func fieldCountLimit() {
        let limits = HTTPRequestParser.Limits(maxHeadBytes: 4096, maxHeaderFields: 3, maxBodyBytes: 10)
        let three = Self.bytes("GET / HTTP/1.1\r\nHost: x\r\nA: 1\r\nB: 2\r\n\r\n")
        guard case .request = Self.parse(three, limits: limits).first else {
            Issue.record("three fields must parse")
            return
        }
        let four = Self.bytes("GET / HTTP/1.1\r\nHost: x\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n")
        guard case .failure(let error) = Self.parse(four, limits: limits).first else {
            Issue.record("four fields must fail")
            return
        }
        #expect(error.status == 431 && error.slug == "too-many-header-fields")
    }

    @Test("the body limit applies to Content-Length and to the sum of chunks")
    func bodyLimit() {
        let limits = HTTPRequestParser.Limits(maxHeadBytes: 4096, maxHeaderFields: 10, maxBodyBytes: 8)
        let atLimit = Self.bytes("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 8\r\n\r\n12345678")
        #expect(Self.parse(atLimit, limits: limits).count == 1)
        guard case .request(_, let body) = Self.parse(atLimit, limits: limits).first else {
            Issue.record("a body of exactly the limit must parse")
            return
        }
        #expect(body.count == 8)
        let chunked = Self.bytes(
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n12345\r\n4\r\n6789\r\n0\r\n\r\n"
        )
        guard case .failure(let error) = Self.parse(chunked, limits: limits).first else {
            Issue.record("chunks summing past the limit must fail")
            return
        }
        #expect(error.status == 413)
    }

    @Test("413 is decided from Content-Length before any body byte arrives")
    func bodyTooLargeBeforeBody() {
        var parser = HTTPRequestParser()
        parser.append(Self.bytes("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10485760\r\n\r\n"))
        guard case .failure(let error) = parser.next() else {
            Issue.record("expected 413 with no body sent")
            return
        }
        #expect(error.status == 413)
    }

    @Test("a route with its own body limit takes more; the others, and its other methods, keep the default")
    func bodyLimitByRoute() {
        var limits = HTTPRequestParser.Limits(maxBodyBytes: 10)
        limits.maxBodyBytesByRoute = ["POST /batch": 20]
        func status(_ line: String, length: Int, chunked: Bool = false) -> Int? {
            var parser = HTTPRequestParser(limits: limits)
            let body = String(repeating: "a", count: length)
            let framing =
                chunked
                ? "Transfer-Encoding: chunked\r\n\r\n\(String(length, radix: 16))\r\n\(body)\r\n0\r\n\r\n"
                : "Content-Length: \(length)\r\n\r\n\(body)"
            parser.append(Self.bytes("\(line) HTTP/1.1\r\nHost: x\r\n\(framing)"))
            switch parser.next() {
            case .request: return 200
            case .failure(let error): return error.status
            default: return nil
            }
        }
        #expect(status("POST /batch", length: 20) == 200)
        #expect(status("POST /batch?x=1", length: 20, chunked: true) == 200)
        #expect(status("POST /batch", length: 21) == 413)
        #expect(status("POST /batch", length: 21, chunked: true) == 413)
        #expect(status("POST /other", length: 11) == 413)
        #expect(status("PUT /batch", length: 11) == 413)
        #expect(status("POST /other", length: 10) == 200)
    }

    @Test("after a failure nothing more is yielded and later bytes are dropped")
    func failureIsFinal() {
        var parser = HTTPRequestParser()
        parser.append(Self.bytes("GET / HTTP/1.1\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n"))
        guard case .failure = parser.next() else {
            Issue.record("expected a failure")
            return
        }
        #expect(parser.next() == nil)
        parser.append(Self.bytes("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
        #expect(parser.next() == nil)
        #expect(parser.bufferedByteCount == 0 && parser.hasFailed)
    }

    @Test("100-continue is announced only while the body is still missing, and never for HTTP/1.0")
    func expectContinue() {
        var parser = HTTPRequestParser()
        parser.append(Self.bytes("POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n"))
        #expect(parser.next() == .continueExpected)
        #expect(parser.next() == nil)
        parser.append(Self.bytes("ok"))
        guard case .request(_, let body) = parser.next() else {
            Issue.record("expected the request after its body")
            return
        }
        #expect(body == Self.bytes("ok"))

        var complete = HTTPRequestParser()
        complete.append(Self.bytes("POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nok"))
        guard case .request = complete.next() else {
            Issue.record("a body already present needs no 100 Continue")
            return
        }

        var old = HTTPRequestParser()
        old.append(Self.bytes("POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n"))
        #expect(old.next() == nil, "HTTP/1.0 ignores the expectation")
    }

    @Test("isIdle tells whether a request is partly received")
    func idleTracking() {
        var parser = HTTPRequestParser()
        #expect(parser.isIdle)
        parser.append(Self.bytes("GET / HTTP/1.1\r\nHo"))
        #expect(parser.next() == nil && !parser.isIdle)
        parser.append(Self.bytes("st: x\r\n\r\n"))
        guard case .request = parser.next() else {
            Issue.record("expected a request")
            return
        }
        #expect(parser.isIdle)
    }

    @Test(
        "keep-alive follows the version and the Connection tokens",
        arguments: [
            ("HTTP/1.1", nil, true), ("HTTP/1.1", "close", false), ("HTTP/1.1", "Upgrade, Close", false),
            ("HTTP/1.0", nil, false), ("HTTP/1.0", "keep-alive", true), ("HTTP/1.0", "Keep-Alive , x", true),
        ] as [(String, String?, Bool)]
    )
    func keepAlive(_ version: String, _ connection: String?, _ expected: Bool) {
        let field = connection.map { "Connection: \($0)\r\n" } ?? ""
        let events = Self.parse(Self.bytes("GET / \(version)\r\nHost: x\r\n\(field)\r\n"))
        guard case .request(let head, _) = events.first else {
            Issue.record("expected a request, got \(events)")
            return
        }
        #expect(head.keepAlive == expected)
    }
}
