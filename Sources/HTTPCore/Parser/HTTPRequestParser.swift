/// A strict, incremental HTTP/1.1 request parser (RFC 9112) that performs no I/O.
///
/// Bytes go in with `append(_:)` in pieces of any size; `next()` yields requests in order, one
/// event per call, or nil when it needs more bytes. Feeding a stream whole, byte by byte, or split
/// anywhere yields the same requests and the same first error: every decision depends only on
/// bytes already seen, and scanning resumes where it stopped, so work stays linear in the input.
///
/// Strictness is the point: anything a lenient peer could read differently (bare LF, obs-fold,
/// whitespace before a colon, duplicate or malformed `Content-Length`, `Transfer-Encoding` with
/// `Content-Length`) is an error, and the first error is final: the parser drops its buffer and
/// yields nothing more, because nothing after malformed framing can be trusted.
/// Limits are enforced before bytes are kept: a head is refused at the first byte past
/// `maxHeadBytes`, and an oversized body as soon as its declared size is known.
public struct HTTPRequestParser: Sendable {
    public struct Limits: Hashable, Sendable {
        /// Request line plus header section, including every CRLF (431 beyond it).
        public var maxHeadBytes: Int
        /// Header field lines; trailer fields of a chunked body count separately (431 beyond it).
        public var maxHeaderFields: Int
        /// Decoded body bytes (413 beyond it, decided from `Content-Length` before reading).
        public var maxBodyBytes: Int
        /// Larger body limits for a few routes, keyed `"METHOD /path"` (the target without its query):
        /// a batch endpoint may take more than the rest, which keep `maxBodyBytes`.
        public var maxBodyBytesByRoute: [String: Int] = [:]

        public init(maxHeadBytes: Int = 16 * 1024, maxHeaderFields: Int = 100, maxBodyBytes: Int = 64 * 1024) {
            precondition(maxHeadBytes > 0 && maxHeaderFields >= 0 && maxBodyBytes >= 0, "limits must be positive")
            self.maxHeadBytes = maxHeadBytes
            self.maxHeaderFields = maxHeaderFields
            self.maxBodyBytes = maxBodyBytes
        }

        /// The body limit of a request with this method and target.
        public func maxBodyBytes(method: String, target: String) -> Int {
            guard !maxBodyBytesByRoute.isEmpty else { return maxBodyBytes }
            let path = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            return maxBodyBytesByRoute["\(method) \(path)"] ?? maxBodyBytes
        }
    }

    public enum Event: Hashable, Sendable {
        /// A complete request with its whole (de-chunked) body.
        case request(HTTPRequestHead, body: [UInt8])
        /// The head asked for `Expect: 100-continue` and its body has not fully arrived: the server
        /// may send `100 Continue`. Which reads produce this depends on how the bytes were split.
        case continueExpected
        /// The stream is malformed; no event follows.
        case failure(HTTPParseError)
    }

    /// A chunk-size line with extensions longer than this is refused; real ones are a few bytes.
    static let maxChunkLineBytes = 1024

    public let limits: Limits

    // Bytes before `readIndex` are consumed; offsets below are relative to `readIndex`, so
    // compaction only resets `readIndex`.
    private var buffer: [UInt8] = []
    private var readIndex = 0
    private var phase = Phase.head
    private var scanOffset = 0
    private var lineStart = 0

    // The head being assembled.
    private var requestLine: RequestLine?
    private var fields: [HTTPField] = []
    private var framing = Framing()

    // The body being assembled once the head is complete.
    private var pendingHead: HTTPRequestHead?
    private var body: [UInt8] = []
    private var bodyLimit = 0
    private var remaining = 0
    private var trailerFieldCount = 0

    private enum Phase: Sendable {
        case head
        case fixedBody
        case chunkSize
        case chunkData
        case chunkDataEnd
        case trailers
        case failed
    }

    private struct RequestLine: Sendable {
        var method: String
        var target: String
        var version: HTTPVersion
    }

    /// What the header fields said about framing, checked once the head is complete.
    private struct Framing: Sendable {
        var contentLength: Int?
        var transferEncodingCount = 0
        var chunked = false
        var hostCount = 0
        var expectsContinue = false
        var unsupportedExpectation = false
    }

    private enum LineScan {
        case needMore
        case line(start: Int, end: Int)
        case failure(HTTPParseError)
    }

    private enum KnownField {
        case contentLength
        case transferEncoding
        case host
        case expect
        case other
    }

    public init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// True when no byte of an unfinished request is buffered: the connection is between requests.
    public var isIdle: Bool {
        phase == .head && readIndex == buffer.count
    }

    /// Bytes received and not yet consumed by a yielded request.
    public var bufferedByteCount: Int {
        buffer.count - readIndex
    }

    public var hasFailed: Bool {
        phase == .failed
    }

    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard prepareForAppend(), !bytes.isEmpty else { return }
        buffer.append(contentsOf: bytes)
    }

    public mutating func append(_ bytes: some Collection<UInt8>) {
        guard prepareForAppend(), !bytes.isEmpty else { return }
        buffer.append(contentsOf: bytes)
    }

    /// Compacts consumed bytes away; returns false once failed (later bytes are dropped unread).
    private mutating func prepareForAppend() -> Bool {
        guard phase != .failed else { return false }
        if readIndex == buffer.count {
            // Between requests: let a connection that once carried a large body shrink back.
            if buffer.capacity > 8 * 1024 {
                buffer = []
            } else {
                buffer.removeAll(keepingCapacity: true)
            }
            readIndex = 0
        } else if readIndex > 0 {
            buffer.removeSubrange(0..<readIndex)
            readIndex = 0
        }
        return true
    }

    /// The next complete request, a failure, a `continueExpected` hint, or nil if more bytes are needed.
    public mutating func next() -> Event? {
        switch phase {
        case .head: parseHead()
        case .fixedBody: finishFixedBody()
        case .chunkSize, .chunkData, .chunkDataEnd, .trailers: parseChunkedBody()
        case .failed: nil
        }
    }

    private mutating func fail(_ error: HTTPParseError) -> Event {
        phase = .failed
        buffer = []
        readIndex = 0
        fields = []
        body = []
        pendingHead = nil
        return .failure(error)
    }

    // MARK: - Lines

    /// Finds the CRLF ending the line that starts at `lineStart`, resuming at `scanOffset`.
    /// The line plus its CRLF must end at or before offset `limit`; `tooLong` is the error otherwise.
    private mutating func scanLine(limit: Int, tooLong: HTTPParseError) -> LineScan {
        let available = buffer.count - readIndex
        let end = min(available, limit)
        let base = readIndex
        let start = lineStart
        var offset = scanOffset
        let found: LineScan? = buffer.withUnsafeBufferPointer { bytes in
            while offset < end {
                let byte = bytes[base + offset]
                if byte == ASCII.cr {
                    if offset + 2 > limit { return .failure(tooLong) }
                    if offset + 1 >= available { return .needMore }
                    guard bytes[base + offset + 1] == ASCII.lf else {
                        return .failure(HTTPParseError(.bareCarriageReturn, "CR must be followed by LF."))
                    }
                    return .line(start: start, end: offset)
                }
                if byte == ASCII.lf {
                    return .failure(HTTPParseError(.bareLineFeed, "Lines must end with CRLF, not a bare LF."))
                }
                offset += 1
            }
            return nil
        }
        scanOffset = offset
        if let found { return found }
        return offset >= limit ? .failure(tooLong) : .needMore
    }

    /// Runs `body` over the bytes at relative offsets `start..<end`.
    private func withLine<R>(_ start: Int, _ end: Int, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        buffer.withUnsafeBufferPointer { bytes in
            body(UnsafeBufferPointer(rebasing: bytes[(readIndex + start)..<(readIndex + end)]))
        }
    }

    // MARK: - Head

    private mutating func parseHead() -> Event? {
        let tooLarge = HTTPParseError(
            .headTooLarge,
            "The request line and header fields must fit in \(limits.maxHeadBytes) bytes."
        )
        while true {
            let start: Int
            let end: Int
            switch scanLine(limit: limits.maxHeadBytes, tooLong: tooLarge) {
            case .needMore: return nil
            case .failure(let error): return fail(error)
            case .line(let lineStartOffset, let lineEndOffset):
                start = lineStartOffset
                end = lineEndOffset
            }
            lineStart = end + 2
            scanOffset = lineStart

            guard requestLine != nil else {
                // RFC 9112 §2.2: empty lines before the request line are ignored (they still count
                // toward the head limit, so a stream of CRLFs cannot run forever).
                if start == end { continue }
                switch withLine(start, end, Self.parseRequestLine) {
                case .success(let line): requestLine = line
                case .failure(let error): return fail(error)
                }
                continue
            }
            if start == end {
                return finishHead(length: lineStart)
            }
            if let error = addField(start, end) {
                return fail(error)
            }
        }
    }

    private mutating func addField(_ start: Int, _ end: Int) -> HTTPParseError? {
        guard fields.count < limits.maxHeaderFields else {
            return HTTPParseError(.tooManyHeaderFields, "At most \(limits.maxHeaderFields) header fields are accepted.")
        }
        let parsed: (field: HTTPField, kind: KnownField)
        switch withLine(start, end, Self.parseFieldLine) {
        case .success(let result): parsed = result
        case .failure(let error): return error
        }
        switch parsed.kind {
        case .contentLength:
            guard framing.contentLength == nil else {
                return HTTPParseError(.duplicateContentLength, "Send Content-Length once.")
            }
            guard let length = withLine(start, end, Self.parseContentLength) else {
                return HTTPParseError(.invalidContentLength, "Content-Length must be a decimal number of bytes.")
            }
            framing.contentLength = length
        case .transferEncoding:
            framing.transferEncodingCount += 1
            guard framing.transferEncodingCount == 1 else {
                return HTTPParseError(.invalidTransferEncoding, "Send Transfer-Encoding once.")
            }
            framing.chunked = HTTPField.equalsIgnoringASCIICase(parsed.field.value, "chunked")
        case .host:
            framing.hostCount += 1
            guard framing.hostCount == 1 else {
                return HTTPParseError(.duplicateHost, "Send Host exactly once.")
            }
            guard parsed.field.value.utf8.allSatisfy(Self.isHostByte) else {
                return HTTPParseError(.invalidHost, "Host must be a host name or address with an optional port.")
            }
        case .expect:
            if HTTPField.equalsIgnoringASCIICase(parsed.field.value, "100-continue") {
                framing.expectsContinue = true
            } else {
                framing.unsupportedExpectation = true
            }
        case .other:
            break
        }
        fields.append(parsed.field)
        return nil
    }

    private mutating func finishHead(length: Int) -> Event? {
        guard let line = requestLine else { preconditionFailure("head finished without a request line") }
        let framing = self.framing
        if line.version == .http1_1 && framing.hostCount == 0 {
            return fail(HTTPParseError(.missingHost, "HTTP/1.1 requests must carry a Host field."))
        }
        if framing.transferEncodingCount > 0 {
            if line.version == .http1_0 {
                return fail(HTTPParseError(.invalidTransferEncoding, "HTTP/1.0 requests cannot use Transfer-Encoding."))
            }
            if framing.contentLength != nil {
                return fail(
                    HTTPParseError(
                        .contentLengthWithTransferEncoding,
                        "Send either Content-Length or Transfer-Encoding, not both."
                    )
                )
            }
            if !framing.chunked {
                return fail(
                    HTTPParseError(.unsupportedTransferEncoding, "Only Transfer-Encoding: chunked is supported.")
                )
            }
        }
        bodyLimit = limits.maxBodyBytes(method: line.method, target: line.target)
        if let contentLength = framing.contentLength, contentLength > bodyLimit {
            return fail(bodyTooLarge())
        }
        if framing.unsupportedExpectation {
            return fail(HTTPParseError(.unsupportedExpectation, "Only Expect: 100-continue is supported."))
        }
        // RFC 9110 §10.1.1: a 100-continue expectation in an HTTP/1.0 request is ignored.
        let expectsContinue = framing.expectsContinue && line.version == .http1_1

        let head = HTTPRequestHead(
            method: line.method,
            target: line.target,
            version: line.version,
            headers: HTTPHeaders(fields)
        )
        readIndex += length
        scanOffset = 0
        lineStart = 0
        requestLine = nil
        fields = []
        self.framing = Framing()

        if framing.chunked {
            phase = .chunkSize
            pendingHead = head
            body = []
            trailerFieldCount = 0
            return expectsContinue ? .continueExpected : parseChunkedBody()
        }
        let contentLength = framing.contentLength ?? 0
        guard contentLength > 0 else {
            return .request(head, body: [])
        }
        phase = .fixedBody
        pendingHead = head
        remaining = contentLength
        if expectsContinue && bufferedByteCount < contentLength {
            return .continueExpected
        }
        return finishFixedBody()
    }

    private func bodyTooLarge() -> HTTPParseError {
        HTTPParseError(.bodyTooLarge, "The request body must not exceed \(bodyLimit) bytes.")
    }

    // MARK: - Bodies

    private mutating func finishFixedBody() -> Event? {
        guard bufferedByteCount >= remaining, let head = pendingHead else { return nil }
        let received = Array(buffer[readIndex..<(readIndex + remaining)])
        readIndex += remaining
        remaining = 0
        pendingHead = nil
        phase = .head
        return .request(head, body: received)
    }

    private mutating func parseChunkedBody() -> Event? {
        let badChunk = HTTPParseError(.invalidChunkedBody, "The chunked body is malformed.")
        while true {
            switch phase {
            case .chunkSize:
                let start: Int
                let end: Int
                switch scanLine(limit: Self.maxChunkLineBytes, tooLong: badChunk) {
                case .needMore: return nil
                case .failure(let error): return fail(error)
                case .line(let lineStartOffset, let lineEndOffset):
                    start = lineStartOffset
                    end = lineEndOffset
                }
                guard let size = withLine(start, end, Self.parseChunkSize) else { return fail(badChunk) }
                readIndex += end + 2
                scanOffset = 0
                lineStart = 0
                if size == 0 {
                    phase = .trailers
                } else if size > bodyLimit - body.count {
                    return fail(bodyTooLarge())
                } else {
                    remaining = size
                    phase = .chunkData
                }
            case .chunkData:
                let count = min(bufferedByteCount, remaining)
                guard count > 0 else { return nil }
                body.append(contentsOf: buffer[readIndex..<(readIndex + count)])
                readIndex += count
                remaining -= count
                guard remaining == 0 else { return nil }
                phase = .chunkDataEnd
            case .chunkDataEnd:
                let available = bufferedByteCount
                if available >= 1 && buffer[readIndex] != ASCII.cr { return fail(badChunk) }
                if available >= 2 && buffer[readIndex + 1] != ASCII.lf { return fail(badChunk) }
                guard available >= 2 else { return nil }
                readIndex += 2
                phase = .chunkSize
            case .trailers:
                let tooLarge = HTTPParseError(
                    .headTooLarge,
                    "The trailer section must fit in \(limits.maxHeadBytes) bytes."
                )
                let start: Int
                let end: Int
                switch scanLine(limit: limits.maxHeadBytes, tooLong: tooLarge) {
                case .needMore: return nil
                case .failure(let error): return fail(error)
                case .line(let lineStartOffset, let lineEndOffset):
                    start = lineStartOffset
                    end = lineEndOffset
                }
                lineStart = end + 2
                scanOffset = lineStart
                guard start == end else {
                    // Trailers are checked like header fields and then dropped: nothing here reads them.
                    if case .failure(let error) = withLine(start, end, Self.parseFieldLine) { return fail(error) }
                    trailerFieldCount += 1
                    if trailerFieldCount > limits.maxHeaderFields {
                        return fail(
                            HTTPParseError(
                                .tooManyHeaderFields,
                                "At most \(limits.maxHeaderFields) trailer fields are accepted."
                            )
                        )
                    }
                    continue
                }
                guard let head = pendingHead else { preconditionFailure("chunked body without a head") }
                readIndex += lineStart
                scanOffset = 0
                lineStart = 0
                pendingHead = nil
                phase = .head
                let received = body
                body = []
                return .request(head, body: received)
            case .head, .fixedBody, .failed:
                preconditionFailure("parseChunkedBody called in phase \(phase)")
            }
        }
    }
}

// MARK: - Line grammars (pure functions over one line, CRLF excluded)

extension HTTPRequestParser {
    /// `method SP origin-form SP HTTP-version`, with exactly one space between parts.
    private static func parseRequestLine(_ line: UnsafeBufferPointer<UInt8>) -> Result<RequestLine, HTTPParseError> {
        let malformed = HTTPParseError(.invalidRequestLine, "The request line must be 'METHOD /target HTTP/1.1'.")
        guard let firstSpace = line.firstIndex(of: ASCII.space),
            let secondSpace = line[(firstSpace + 1)...].firstIndex(of: ASCII.space),
            !line[(secondSpace + 1)...].contains(ASCII.space),
            firstSpace > 0, secondSpace > firstSpace + 1
        else { return .failure(malformed) }

        let versionBytes = UnsafeBufferPointer(rebasing: line[(secondSpace + 1)...])
        guard versionBytes.count == 8, versionBytes.starts(with: "HTTP/".utf8),
            ASCII.isDigit(versionBytes[5]), versionBytes[6] == UInt8(ascii: "."), ASCII.isDigit(versionBytes[7])
        else { return .failure(malformed) }
        let version = HTTPVersion(
            major: Int(versionBytes[5] - UInt8(ascii: "0")),
            minor: Int(versionBytes[7] - UInt8(ascii: "0"))
        )
        guard version == .http1_1 || version == .http1_0 else {
            return .failure(HTTPParseError(.unsupportedVersion, "Only HTTP/1.1 and HTTP/1.0 are supported."))
        }

        let method = UnsafeBufferPointer(rebasing: line[..<firstSpace])
        guard method.allSatisfy(ASCII.isTokenByte) else {
            return .failure(HTTPParseError(.invalidMethod, "The method must be a token such as GET or POST."))
        }

        let target = UnsafeBufferPointer(rebasing: line[(firstSpace + 1)..<secondSpace])
        guard target[0] == UInt8(ascii: "/"), isValidOriginForm(target) else {
            return .failure(
                HTTPParseError(
                    .invalidTarget,
                    "The target must be an absolute path with an optional query, percent-encoded where needed."
                )
            )
        }
        return .success(
            RequestLine(
                method: String(decoding: method, as: UTF8.self),
                target: String(decoding: target, as: UTF8.self),
                version: version
            )
        )
    }

    /// RFC 3986 path and query characters; every `%` starts a two-digit hex escape. `#` is refused:
    /// a fragment is never sent to a server.
    private static func isValidOriginForm(_ target: UnsafeBufferPointer<UInt8>) -> Bool {
        var index = 0
        while index < target.count {
            let byte = target[index]
            if byte == UInt8(ascii: "%") {
                guard index + 2 < target.count, ASCII.hexValue(target[index + 1]) != nil,
                    ASCII.hexValue(target[index + 2]) != nil
                else { return false }
                index += 3
                continue
            }
            guard
                ASCII.isUnreserved(byte) || ASCII.isSubDelimiter(byte) || byte == UInt8(ascii: ":")
                    || byte == UInt8(ascii: "@") || byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?")
            else { return false }
            index += 1
        }
        return true
    }

    /// `field-name ":" OWS field-value OWS`, refusing obs-fold and whitespace before the colon.
    private static func parseFieldLine(
        _ line: UnsafeBufferPointer<UInt8>
    ) -> Result<(field: HTTPField, kind: KnownField), HTTPParseError> {
        if line[0] == ASCII.space || line[0] == ASCII.tab {
            return .failure(HTTPParseError(.obsoleteLineFolding, "Header values must not be folded across lines."))
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > 0 else {
            return .failure(HTTPParseError(.invalidHeaderField, "Each header line must be 'Name: value'."))
        }
        let name = UnsafeBufferPointer(rebasing: line[..<colon])
        if name[name.count - 1] == ASCII.space || name[name.count - 1] == ASCII.tab {
            return .failure(
                HTTPParseError(.whitespaceBeforeColon, "A header name must be followed by ':' without whitespace.")
            )
        }
        guard name.allSatisfy(ASCII.isTokenByte) else {
            return .failure(HTTPParseError(.invalidHeaderField, "A header name must be a token."))
        }

        var valueStart = colon + 1
        var valueEnd = line.count
        while valueStart < valueEnd && (line[valueStart] == ASCII.space || line[valueStart] == ASCII.tab) {
            valueStart += 1
        }
        while valueEnd > valueStart && (line[valueEnd - 1] == ASCII.space || line[valueEnd - 1] == ASCII.tab) {
            valueEnd -= 1
        }
        let valueBytes = UnsafeBufferPointer(rebasing: line[valueStart..<valueEnd])
        let invalidValue = HTTPParseError(.invalidHeaderValue, "Header values must be visible UTF-8 text.")
        var ascii = true
        for byte in valueBytes {
            if byte >= 0x80 {
                ascii = false
            } else if (byte < 0x20 && byte != ASCII.tab) || byte == 0x7F {
                return .failure(invalidValue)
            }
        }
        let value: String
        if ascii {
            value = String(decoding: valueBytes, as: UTF8.self)
        } else {
            guard let decoded = String(validating: valueBytes, as: UTF8.self) else { return .failure(invalidValue) }
            value = decoded
        }
        return .success((HTTPField(name: String(decoding: name, as: UTF8.self), value: value), knownField(name)))
    }

    private static func knownField(_ name: UnsafeBufferPointer<UInt8>) -> KnownField {
        func matches(_ lowercase: StaticString) -> Bool {
            guard name.count == lowercase.utf8CodeUnitCount else { return false }
            let expected = UnsafeBufferPointer(start: lowercase.utf8Start, count: lowercase.utf8CodeUnitCount)
            for index in 0..<name.count where HTTPField.lowercasedASCII(name[index]) != expected[index] {
                return false
            }
            return true
        }
        switch name.count {
        case 4: return matches("host") ? .host : .other
        case 6: return matches("expect") ? .expect : .other
        case 14: return matches("content-length") ? .contentLength : .other
        case 17: return matches("transfer-encoding") ? .transferEncoding : .other
        default: return .other
        }
    }

    /// The value of a `Content-Length` line: 1*DIGIT only (no sign, list or whitespace inside).
    /// Values too large to matter saturate, so the caller answers 413 rather than overflow.
    private static func parseContentLength(_ line: UnsafeBufferPointer<UInt8>) -> Int? {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        var start = colon + 1
        var end = line.count
        while start < end && (line[start] == ASCII.space || line[start] == ASCII.tab) { start += 1 }
        while end > start && (line[end - 1] == ASCII.space || line[end - 1] == ASCII.tab) { end -= 1 }
        guard start < end else { return nil }
        return decimal(UnsafeBufferPointer(rebasing: line[start..<end]))
    }

    private static func decimal(_ digits: UnsafeBufferPointer<UInt8>) -> Int? {
        let saturation = Int(Int32.max)
        var value = 0
        for byte in digits {
            guard ASCII.isDigit(byte) else { return nil }
            value = min(value * 10 + Int(byte - UInt8(ascii: "0")), saturation)
        }
        return value
    }

    /// `1*HEXDIG [ BWS ";" chunk-ext ]`; extensions are checked for control bytes and ignored.
    private static func parseChunkSize(_ line: UnsafeBufferPointer<UInt8>) -> Int? {
        let saturation = Int(Int32.max)
        var value = 0
        var index = 0
        while index < line.count, let digit = ASCII.hexValue(line[index]) {
            value = min(value * 16 + Int(digit), saturation)
            index += 1
        }
        guard index > 0 else { return nil }
        while index < line.count && (line[index] == ASCII.space || line[index] == ASCII.tab) { index += 1 }
        guard index < line.count else { return value }
        guard line[index] == UInt8(ascii: ";") else { return nil }
        for byte in line[index...] where (byte < 0x20 && byte != ASCII.tab) || byte == 0x7F {
            return nil
        }
        return value
    }

    /// Characters of `uri-host [ ":" port ]`, including IP literals in brackets.
    private static func isHostByte(_ byte: UInt8) -> Bool {
        ASCII.isUnreserved(byte) || ASCII.isSubDelimiter(byte) || byte == UInt8(ascii: ":")
            || byte == UInt8(ascii: "[") || byte == UInt8(ascii: "]") || byte == UInt8(ascii: "%")
    }
}
