// libFuzzer entry point for `ImportReader`, the streaming CSV (RFC 4180) and JSON Lines reader of
// `accounts import` (docs/architecture.md, Importing accounts). Compiled with the reader and the JSON
// reader only (see ../run.sh). The first byte of an input picks the format and the row limit, the
// second how the rest is cut into reads; the rest is the file. Besides "no crash, no memory error",
// it checks:
// 1. Split invariance: the rows (line, values or refusal) and the input error are the same whether
//    the reader has the file in memory or reads it from a descriptor in pieces of arbitrary sizes
//    (a SOCK_SEQPACKET socket hands over exactly one piece per read).
// 2. Line numbers increase from row to row, never past the file's lines; no row has more bytes of
//    values than the row limit.
// 3. A CSV row it reads is read back the same from the CSV it writes out again (every field quoted,
//    quotes doubled), under the same header.

import Glibc

func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("invariant broken: \(message())") }
}

struct Reading: Equatable {
    var rows: [String] = []
    var parsed: [(line: Int64, row: ImportRawRow)] = []
    var lines: [Int64] = []
    var inputError: String?

    static func == (a: Reading, b: Reading) -> Bool { a.rows == b.rows && a.inputError == b.inputError }
}

func describe(_ row: ImportSourceRow) -> String {
    switch row.row {
    case .success(let raw):
        let values = raw.values.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key.rawValue)=\($0.value)" }
        return "\(row.line) ok \(values) \(raw.recoveryCodes ?? [])"
    case .failure(let error): return "\(row.line) refused \(error)"
    }
}

func readAll(_ reader: inout ImportReader) -> Reading {
    var reading = Reading()
    do {
        while let row = try reader.next() {
            reading.rows.append(describe(row))
            reading.lines.append(row.line)
            if case .success(let raw) = row.row { reading.parsed.append((row.line, raw)) }
            require(reading.rows.count <= 100_000, "the reader does not end")
        }
    } catch {
        reading.inputError = error.message
    }
    return reading
}

/// The same bytes from a descriptor, cut into pieces whose sizes come from `seed`.
func readPieces(_ file: [UInt8], format: ImportFormat, limit: Int, seed: UInt8) -> Reading {
    var pair: [Int32] = [-1, -1]
    guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &pair) == 0 else { fatalError("socketpair failed") }
    var size = 256 * 1024
    setsockopt(pair[0], SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int>.size))
    var offset = 0
    var step = Int(seed) % 7 + 1
    var sent = 0
    while offset < file.count {
        // Nothing reads until every piece is sent, and each packet takes far more of the send buffer
        // than its bytes: past 100 pieces the rest goes as one (some seeds keep the step at 1 byte,
        // and a long input then filled the buffer and blocked).
        let piece = sent < 100 ? min(step, file.count - offset) : file.count - offset
        sent += 1
        let taken = file[offset..<offset + piece].withUnsafeBytes { send(pair[0], $0.baseAddress, piece, 0) }
        require(taken == piece, "the socket took \(taken) of \(piece) bytes")
        offset += piece
        step = (step * 5 + Int(seed)) % 97 + 1
    }
    close(pair[0])
    defer { close(pair[1]) }
    var reader = ImportReader(descriptor: pair[1], format: format, maxRowBytes: limit)
    return readAll(&reader)
}

/// Every quote byte doubled: `replacing` over the bytes. Over the String it works on Characters, and
/// a quote followed by a combining mark, one Character, stayed single (this harness's own bug,
/// found by a longer run).
func quoted(_ text: String) -> String {
    let quote = UInt8(ascii: "\"")
    return String(
        decoding: [quote] + Array(text.utf8).replacing([quote], with: [quote, quote]) + [quote],
        as: UTF8.self
    )
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard bytes.count >= 2 else { return 0 }
    let format: ImportFormat = bytes[0] & 1 == 0 ? .csv : .jsonl
    let limit = bytes[0] & 2 == 0 ? 48 : ImportReader.defaultMaxRowBytes
    let file = Array(bytes[2...])

    var memory = ImportReader(bytes: file, format: format, maxRowBytes: limit)
    let reading = readAll(&memory)
    // 1.
    let pieces = readPieces(file, format: format, limit: limit, seed: bytes[1])
    require(
        pieces == reading,
        "reading in pieces differs: \(pieces.rows) \(pieces.inputError ?? "-") against \(reading.rows) \(reading.inputError ?? "-")"
    )
    // 2.
    let fileLines = Int64(file.count { $0 == UInt8(ascii: "\n") }) + 1
    for (previous, next) in zip(reading.lines, reading.lines.dropFirst()) {
        require(previous < next, "line \(next) follows line \(previous)")
    }
    let inFile = reading.lines.allSatisfy { (1...fileLines).contains($0) }
    require(inFile, "a line past the file's \(fileLines): \(reading.lines)")
    for (_, row) in reading.parsed {
        let codes = (row.recoveryCodes ?? []).reduce(0) { $0 + $1.utf8.count }
        let total = row.values.values.reduce(0) { $0 + $1.utf8.count } + codes
        require(total <= limit, "a row of \(total) bytes of values read under a limit of \(limit)")
    }
    // 3. Under a header naming every field, so that each value has its column.
    guard format == .csv, reading.inputError == nil, !reading.parsed.isEmpty else { return 0 }
    let fields = ImportField.allCases
    var text = fields.map(\.rawValue).joined(separator: ",") + "\n"
    for (_, row) in reading.parsed {
        let cells = fields.map { field in
            quoted(field == .recoveryCodes ? (row.recoveryCodes ?? []).joined(separator: " ") : row.values[field] ?? "")
        }
        text += cells.joined(separator: ",") + "\r\n"
    }
    var again = ImportReader(bytes: Array(text.utf8), format: .csv, maxRowBytes: 1 << 20)
    let reread = readAll(&again)
    require(reread.inputError == nil, "the CSV written out again is refused: \(reread.inputError ?? "")")
    require(reread.parsed.count == reading.parsed.count, "the CSV written out again has other rows: \(reread.rows)")
    for (first, second) in zip(reading.parsed, reread.parsed) {
        require(first.row == second.row, "a row reads back otherwise: \(first.row) against \(second.row)")
    }
    return 0
}
