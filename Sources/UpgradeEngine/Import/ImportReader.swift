#if canImport(Glibc)
import Glibc
#endif

/// The input formats `accounts import` reads.
public enum ImportFormat: String, Sendable, CaseIterable {
    /// One JSON object per line.
    case jsonl
    /// RFC 4180 CSV with a header row naming the fields.
    case csv
}

/// The fields an import row may carry (README, Importing accounts).
public enum ImportField: String, Sendable, CaseIterable {
    case username, email, displayName, passwordHash, legacyPassword, totp, recoveryCodes, appleSub
}

/// A row as read, before validation: each field's text, absent when the row left it out or empty.
public struct ImportRawRow: Sendable, Equatable {
    public var values: [ImportField: String] = [:]
    /// `recoveryCodes` as a list: a JSON array, or the CSV field split at spaces.
    public var recoveryCodes: [String]?

    public init(values: [ImportField: String] = [:], recoveryCodes: [String]? = nil) {
        self.values = values
        self.recoveryCodes = recoveryCodes
    }
}

/// Why one row was refused: the field (nil for the row as a whole) and a specific reason.
public struct ImportRowError: Error, Sendable, Equatable, CustomStringConvertible {
    public var field: String?
    public var reason: String
    /// The row's `username` as typed, when the row could be read that far: a report names the row
    /// by it even when another field refused the row.
    public var typedUsername: String?

    public init(field: String?, _ reason: String, typedUsername: String? = nil) {
        self.field = field
        self.reason = reason
        self.typedUsername = typedUsername
    }

    public var description: String { field.map { "\($0): \(reason)" } ?? reason }
}

/// A row and the input line it starts on (1-based), or why it could not be read.
public struct ImportSourceRow: Sendable {
    public var line: Int64
    public var row: Result<ImportRawRow, ImportRowError>
}

/// Why the input as a whole cannot be imported (unreadable, a CSV header that names no username).
/// Nothing has been written when one is thrown before the first row.
public struct ImportInputError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// A strict, bounded, streaming reader of JSON Lines or RFC 4180 CSV from a file descriptor.
///
/// Memory stays within one read buffer and one row, whatever the input's size: a line or record
/// longer than `maxRowBytes` is refused as a row error and skipped to its end without being kept,
/// as is a record with more than `maxFields` fields. A row error never stops the reader; only a
/// read error or an unusable CSV header does (`ImportInputError`).
public struct ImportReader {
    public static let defaultMaxRowBytes = 64 * 1024
    public static let maxFields = 64

    public let format: ImportFormat
    public let maxRowBytes: Int
    private var source: ByteSource
    /// The physical line the reader is on (1-based).
    private var line: Int64 = 1
    private var columns: [ImportField?] = []
    private var startedReading = false

    /// Bytes consumed so far, for progress against the file's size.
    public var bytesRead: Int64 { source.consumed }

    /// Reads `descriptor` (not closed by the reader).
    public init(descriptor: Int32, format: ImportFormat, maxRowBytes: Int = defaultMaxRowBytes) {
        self.format = format
        self.maxRowBytes = maxRowBytes
        self.source = ByteSource(descriptor: descriptor)
    }

    /// Reads from bytes in memory (tests, fuzzing).
    public init(bytes: [UInt8], format: ImportFormat, maxRowBytes: Int = defaultMaxRowBytes) {
        self.format = format
        self.maxRowBytes = maxRowBytes
        self.source = ByteSource(bytes: bytes)
    }

    /// The next row, or nil at the end of the input.
    public mutating func next() throws(ImportInputError) -> ImportSourceRow? {
        if !startedReading {
            startedReading = true
            try skipByteOrderMark()
            if format == .csv { try readHeader() }
        }
        switch format {
        case .jsonl: return try nextJSONLine()
        case .csv: return try nextCSVRecord()
        }
    }

    private mutating func skipByteOrderMark() throws(ImportInputError) {
        if try source.peek() == 0xEF {
            let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
            var index = 0
            while index < 3, try source.peek() == bom[index] {
                _ = try source.next()
                index += 1
            }
            guard index == 3 else { throw ImportInputError("the input starts with bytes that are not UTF-8 text") }
        }
    }

    // MARK: JSON Lines

    private mutating func nextJSONLine() throws(ImportInputError) -> ImportSourceRow? {
        while true {
            let start = line
            var bytes: [UInt8] = []
            guard let tooLong = try source.nextLine(into: &bytes, keepingAtMost: maxRowBytes) else { return nil }
            line += 1
            if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
            if tooLong {
                return ImportSourceRow(
                    line: start,
                    row: .failure(ImportRowError(field: nil, "the line is longer than \(maxRowBytes) bytes"))
                )
            }
            // Blank lines (a trailing newline, spacing) are not rows.
            if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
            return ImportSourceRow(line: start, row: Self.parseJSONRow(bytes))
        }
    }

    static func parseJSONRow(_ bytes: [UInt8]) -> Result<ImportRawRow, ImportRowError> {
        let json: JSONValue
        do {
            json = try JSONValue.parse(bytes)
        } catch {
            return .failure(ImportRowError(field: nil, "not valid JSON (\(error.message) at byte \(error.offset))"))
        }
        return parseJSONRow(json, what: "the line")
    }

    /// A parsed row: an object of the known fields, each a string (or, for `recoveryCodes`, an
    /// array of strings) or null. `what` names the row in the refusal of anything else.
    /// `accepted` lists the fields a refusal of an unknown one names (the provisioning API's `PUT`
    /// takes the username from its path).
    static func parseJSONRow(
        _ json: JSONValue,
        what: String,
        accepted: [ImportField] = ImportField.allCases
    ) -> Result<ImportRawRow, ImportRowError> {
        guard let members = json.members else {
            return .failure(ImportRowError(field: nil, "\(what) must be a JSON object"))
        }
        let typed = members.first { $0.key == ImportField.username.rawValue }?.value.stringValue
        var row = ImportRawRow()
        // The parser already refuses a member name given twice.
        for member in members {
            guard let field = ImportField(rawValue: member.key), accepted.contains(field) else {
                let list = accepted.map(\.rawValue).joined(separator: ", ")
                return .failure(
                    ImportRowError(field: member.key, "unknown field; accepted: \(list)", typedUsername: typed)
                )
            }
            switch (field, member.value) {
            case (_, .null):
                continue
            case (.recoveryCodes, .array(let items)):
                var codes: [String] = []
                for item in items {
                    guard let code = item.stringValue else {
                        return .failure(
                            ImportRowError(field: field.rawValue, "must be an array of strings", typedUsername: typed)
                        )
                    }
                    codes.append(code)
                }
                row.recoveryCodes = codes
            case (.recoveryCodes, .string(let text)):
                row.recoveryCodes = Self.splitCodes(text)
            case (.legacyPassword, .bool(let flag)):
                row.values[field] = flag ? "true" : "false"
            case (.legacyPassword, _):
                return .failure(ImportRowError(field: field.rawValue, "must be true or false", typedUsername: typed))
            case (_, .string(let text)):
                if !text.isEmpty { row.values[field] = text }
            default:
                return .failure(ImportRowError(field: field.rawValue, "must be a string", typedUsername: typed))
            }
        }
        return .success(row)
    }

    static let fieldList = ImportField.allCases.map(\.rawValue).joined(separator: ", ")

    /// The codes of a `recoveryCodes` text, split at every space and tab byte. Not at Characters:
    /// a space followed by a combining mark is one Character, and the codes on either side of it
    /// would stay one (docs/architecture.md §12).
    static func splitCodes(_ text: String) -> [String]? {
        let codes = text.utf8.split(whereSeparator: { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") })
            .map { String(decoding: $0, as: UTF8.self) }
        return codes.isEmpty ? nil : codes
    }

    // MARK: CSV (RFC 4180)

    /// One CSV record's fields as bytes, or why it is refused; `nil` at the end of the input.
    private mutating func readCSVRecord() throws(ImportInputError) -> (line: Int64, fields: [[UInt8]], error: String?)?
    {
        enum State { case fieldStart, unquoted, quoted, quoteInQuoted }
        let start = line
        var fields: [[UInt8]] = []
        var field: [UInt8] = []
        var total = 0
        var error: String?
        var state = State.fieldStart
        var sawAny = false
        func fail(_ message: String) { if error == nil { error = message } }

        while true {
            guard let byte = try source.next() else {
                guard sawAny else { return nil }
                if state == .quoted { fail("a quoted field is not closed before the end of the input") }
                break
            }
            sawAny = true
            if byte == UInt8(ascii: "\n") { line += 1 }
            switch state {
            case .quoted:
                if byte == UInt8(ascii: "\"") {
                    state = .quoteInQuoted
                    continue
                }
            case .quoteInQuoted:
                if byte == UInt8(ascii: "\"") {
                    state = .quoted
                } else if byte == UInt8(ascii: ",") {
                    fields.append(field)
                    field = []
                    state = .fieldStart
                    continue
                } else if byte == UInt8(ascii: "\n") {
                    fields.append(field)
                    return (start, fields, error)
                } else if byte == UInt8(ascii: "\r") {
                    continue
                } else {
                    fail("text follows the closing quote of field \(fields.count + 1)")
                    state = .unquoted
                }
            case .fieldStart, .unquoted:
                if byte == UInt8(ascii: "\"") {
                    if state == .fieldStart {
                        state = .quoted
                        continue
                    }
                    fail(
                        "a quote inside the unquoted field \(fields.count + 1) (quote the whole field and double the quote)"
                    )
                } else if byte == UInt8(ascii: ",") {
                    fields.append(field)
                    field = []
                    state = .fieldStart
                    if fields.count > Self.maxFields { fail("more than \(Self.maxFields) fields") }
                    continue
                } else if byte == UInt8(ascii: "\n") {
                    if field.last == UInt8(ascii: "\r") { field.removeLast() }
                    fields.append(field)
                    return (start, fields, error)
                }
                state = .unquoted
            }
            total += 1
            if total > maxRowBytes {
                fail("the record is longer than \(maxRowBytes) bytes")
            } else if error == nil {
                field.append(byte)
            }
        }
        fields.append(field)
        return (start, fields, error)
    }

    private mutating func readHeader() throws(ImportInputError) {
        guard let header = try readCSVRecord() else {
            throw ImportInputError("the CSV input is empty; it needs a header row")
        }
        if let error = header.error { throw ImportInputError("the CSV header row is unreadable: \(error)") }
        var seen = Set<ImportField>()
        for raw in header.fields {
            let name = String(decoding: raw, as: UTF8.self).trimmingSpaces
            guard let field = ImportField(rawValue: name) else {
                throw ImportInputError("the CSV header names an unknown column '\(name)'; accepted: \(Self.fieldList)")
            }
            guard seen.insert(field).inserted else {
                throw ImportInputError("the CSV header names the column '\(name)' twice")
            }
            columns.append(field)
        }
        guard seen.contains(.username) else { throw ImportInputError("the CSV header has no 'username' column") }
    }

    private mutating func nextCSVRecord() throws(ImportInputError) -> ImportSourceRow? {
        while let record = try readCSVRecord() {
            if let error = record.error {
                return ImportSourceRow(line: record.line, row: .failure(ImportRowError(field: nil, error)))
            }
            if record.fields.count == 1 && record.fields[0].isEmpty { continue }
            guard record.fields.count == columns.count else {
                return ImportSourceRow(
                    line: record.line,
                    row: .failure(
                        ImportRowError(
                            field: nil,
                            "has \(record.fields.count) fields; the header has \(columns.count)"
                        )
                    )
                )
            }
            var row = ImportRawRow()
            for (index, bytes) in record.fields.enumerated() where !bytes.isEmpty {
                guard let field = columns[index] else { continue }
                guard let text = String(validating: bytes, as: UTF8.self) else {
                    return ImportSourceRow(
                        line: record.line,
                        row: .failure(ImportRowError(field: field.rawValue, "is not valid UTF-8"))
                    )
                }
                if field == .recoveryCodes {
                    row.recoveryCodes = Self.splitCodes(text)
                } else {
                    row.values[field] = text
                }
            }
            return ImportSourceRow(line: record.line, row: .success(row))
        }
        return nil
    }
}

extension String {
    fileprivate var trimmingSpaces: String {
        var scalars = Substring(self)
        while scalars.first == " " { scalars.removeFirst() }
        while scalars.last == " " { scalars.removeLast() }
        return String(scalars)
    }
}

/// Buffered bytes from a descriptor or from memory. The descriptor's buffer is allocated once and
/// refilled in place: a pipe hands over far less than its size per read.
private struct ByteSource {
    private let descriptor: Int32?
    private var buffer: [UInt8]
    private var index = 0
    /// How many bytes of `buffer` hold input.
    private var end: Int
    private var ended = false
    private(set) var consumed: Int64 = 0

    init(descriptor: Int32) {
        self.descriptor = descriptor
        self.buffer = []
        self.end = 0
    }

    init(bytes: [UInt8]) {
        self.descriptor = nil
        self.buffer = bytes
        self.end = bytes.count
    }

    mutating func peek() throws(ImportInputError) -> UInt8? {
        if index == end { try refill() }
        return index < end ? buffer[index] : nil
    }

    /// The bytes up to the next newline (which is consumed, not kept), at most `limit` of them kept;
    /// returns whether more were dropped, or nil at the end of the input. Whole runs of the buffer
    /// are copied at once.
    mutating func nextLine(into bytes: inout [UInt8], keepingAtMost limit: Int) throws(ImportInputError) -> Bool? {
        var sawAny = false
        var tooLong = false
        while true {
            if index == end { try refill() }
            guard index < end else { return sawAny ? tooLong : nil }
            sawAny = true
            let newline = buffer[index..<end].firstIndex(of: UInt8(ascii: "\n"))
            let runEnd = newline ?? end
            let room = limit - bytes.count
            if runEnd - index > room {
                tooLong = true
                bytes += buffer[index..<index + max(0, room)]
            } else {
                bytes += buffer[index..<runEnd]
            }
            let consumedNow = (newline.map { $0 + 1 } ?? runEnd) - index
            consumed += Int64(consumedNow)
            index += consumedNow
            if newline != nil { return tooLong }
        }
    }

    mutating func next() throws(ImportInputError) -> UInt8? {
        if index == end { try refill() }
        guard index < end else { return nil }
        defer {
            index += 1
            consumed += 1
        }
        return buffer[index]
    }

    private mutating func refill() throws(ImportInputError) {
        guard let descriptor, !ended else { return }
        if buffer.isEmpty { buffer = [UInt8](repeating: 0, count: 256 * 1024) }
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else {
                throw ImportInputError("reading the input failed: \(String(cString: strerror(errno)))")
            }
            if count == 0 { ended = true }
            end = count
            index = 0
            return
        }
    }
}
