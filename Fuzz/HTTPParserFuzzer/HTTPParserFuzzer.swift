// libFuzzer entry point for HTTPRequestParser, compiled together with the parser sources only
// (see ../run-http-parser.sh). Besides "no crash, no memory error", it checks properties that hold
// for every input:
// 1. Splitting the input anywhere (and feeding it byte by byte) yields the same events.
// 2. No request exceeds the limits, and nothing follows a failure.
// 3. A request re-serialized canonically parses back to the same request.

/// Small limits, so that random inputs reach every limit branch.
let limits = HTTPRequestParser.Limits(maxHeadBytes: 512, maxHeaderFields: 8, maxBodyBytes: 256)

/// All events for `bytes` fed in `pieces` (cycled; nil feeds the whole input at once), without
/// `continueExpected`, which depends on the split by design.
func parse(
    _ bytes: [UInt8],
    pieces: [Int]?,
    limits: HTTPRequestParser.Limits = limits
) -> [HTTPRequestParser.Event] {
    var parser = HTTPRequestParser(limits: limits)
    var events: [HTTPRequestParser.Event] = []
    func drain() {
        while let event = parser.next() {
            if event != .continueExpected { events.append(event) }
        }
    }
    guard let pieces else {
        parser.append(bytes)
        drain()
        return events
    }
    var offset = 0
    var turn = 0
    while offset < bytes.count {
        let end = min(bytes.count, offset + max(1, pieces[turn % pieces.count]))
        parser.append(bytes[offset..<end])
        drain()
        offset = end
        turn += 1
    }
    return events
}

/// A broken invariant: `fatalError` keeps its message in optimized builds (a precondition would not),
/// so the fuzzer's report says which property failed.
func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("invariant broken: \(message())") }
}

func serialize(_ head: HTTPRequestHead, body: [UInt8]) -> [UInt8] {
    var text = "\(head.method) \(head.target) \(head.version)\r\n"
    for field in head.headers {
        text += "\(field.name): \(field.value)\r\n"
    }
    return Array((text + "\r\n").utf8) + body
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let whole = parse(bytes, pieces: nil)

    if size > 1 {
        let cut = Int(bytes[0]) % (size - 1) + 1
        require(parse(bytes, pieces: [cut, size]) == whole, "a split at \(cut) changed the events")
        let stride = Int(bytes[size - 1]) % 7 + 1
        require(parse(bytes, pieces: [stride, 1, 3]) == whole, "uneven pieces changed the events")
    }
    if size <= 4096 {
        require(parse(bytes, pieces: [1]) == whole, "byte-by-byte feeding changed the events")
    }

    for (index, event) in whole.enumerated() {
        switch event {
        case .request(let head, let body):
            require(body.count <= limits.maxBodyBytes, "body over the limit")
            require(head.headers.count <= limits.maxHeaderFields, "too many fields")
            require(head.target.utf8.first == UInt8(ascii: "/"), "target not in origin form")
            require(head.version == .http1_1 || head.version == .http1_0, "unsupported version")
            let canonical = serialize(head, body: body)
            if !head.headers.contains("Transfer-Encoding") {
                // Without chunking the canonical form carries the same framing, so it must parse back.
                // It may be longer than the input's head: `: ` after each name where the input had
                // `:`, CR LF where it had LF. The head limit is widened by that much, and only that.
                var roomy = limits
                roomy.maxHeadBytes += 2 * (head.headers.count + 1)
                require(
                    parse(canonical, pieces: nil, limits: roomy) == [.request(head, body: body)],
                    "a canonical re-serialization did not parse back"
                )
            }
        case .failure(let error):
            require(index == whole.count - 1, "an event followed a failure")
            require((400...599).contains(error.status), "failure without an error status")
        case .continueExpected:
            require(false, "continueExpected was filtered above")
        }
    }
    return 0
}
