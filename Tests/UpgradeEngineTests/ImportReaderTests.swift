import Foundation
import Testing

@testable import UpgradeEngine

/// The import reader: RFC 4180 CSV and JSON Lines, strict and bounded, never stopping at a bad row.
@Suite("Import reader")
struct ImportReaderTests {
    typealias Row = (line: Int64, row: Result<ImportRawRow, ImportRowError>)

    static func read(_ text: String, _ format: ImportFormat, maxRowBytes: Int = 1024) throws -> [Row] {
        try read(Array(text.utf8), format, maxRowBytes: maxRowBytes)
    }

    static func read(_ bytes: [UInt8], _ format: ImportFormat, maxRowBytes: Int = 1024) throws -> [Row] {
        var reader = ImportReader(bytes: bytes, format: format, maxRowBytes: maxRowBytes)
        var rows: [Row] = []
        while let next = try reader.next() { rows.append((next.line, next.row)) }
        return rows
    }

    static func error(_ row: Row) -> String? {
        if case .failure(let error) = row.row { return error.description }
        return nil
    }

    @Test("CSV: quotes, doubled quotes, newlines inside quotes, CRLF, blank lines and line numbers")
    func csvQuoting() throws {
        let text =
            "\u{FEFF}username,displayName,recoveryCodes\r\n"
            + "alice,\"Smith, Alice \"\"Al\"\"\",\r\n"
            + "\r\n"
            + "bob,\"two\nlines\",A B\n"
            + "carol,,\n"
            + "dave,plain"
        let rows = try Self.read(text, .csv)
        #expect(rows.map(\.line) == [2, 4, 6, 7])
        let alice = try rows[0].row.get()
        #expect(alice.values == [.username: "alice", .displayName: "Smith, Alice \"Al\""])
        let bob = try rows[1].row.get()
        #expect(bob.values[.displayName] == "two\nlines")
        #expect(bob.recoveryCodes == ["A", "B"])
        #expect(try rows[2].row.get().values == [.username: "carol"])
        #expect(Self.error(rows[3]) == "has 2 fields; the header has 3")
    }

    @Test("CSV: each malformed record is refused with its reason and the next one is read")
    func csvErrors() throws {
        let text =
            "username,email\n"
            + "a\"b,x\n"
            + "\"a\"b,x\n"
            + "ok1,x@y\n"
            + String(repeating: "z", count: 100) + ",x\n"
            + "ok2,x@y\n"
            + "\"never closed,x\nok3,x\n"
        let rows = try Self.read(text, .csv, maxRowBytes: 64)
        #expect(rows.map(\.line) == [2, 3, 4, 5, 6, 7])
        #expect(Self.error(rows[0])?.contains("quote inside the unquoted field 1") == true)
        #expect(Self.error(rows[1])?.contains("text follows the closing quote of field 1") == true)
        #expect(try rows[2].row.get().values[.username] == "ok1")
        #expect(Self.error(rows[3]) == "the record is longer than 64 bytes")
        #expect(try rows[4].row.get().values[.username] == "ok2")
        #expect(Self.error(rows[5]) == "a quoted field is not closed before the end of the input")
    }

    @Test("CSV: a header that cannot be used stops the import before any row")
    func csvHeader() throws {
        for (text, message) in [
            ("", "the CSV input is empty; it needs a header row"),
            ("email\nx@y\n", "the CSV header has no 'username' column"),
            ("username,password\n", "the CSV header names an unknown column 'password'"),
            ("username,username\n", "the CSV header names the column 'username' twice"),
        ] {
            #expect {
                _ = try Self.read(text, .csv)
            } throws: { error in
                (error as? ImportInputError)?.message.hasPrefix(message) == true
            }
        }
    }

    @Test("JSON Lines: objects of strings, nulls, code arrays; everything else is a row error")
    func jsonLines() throws {
        let text = """
            {"username":"alice","recoveryCodes":["a","b"],"email":null}

            {"username":"bob","recoveryCodes":"c d"}\r
            [1]
            {"username":1}
            {"username":"x","username":"y"}
            {"username":"x","password":"y"}
            {"username":"x","recoveryCodes":[1]}
            {"username":
            \(String(repeating: " ", count: 80))
            """
        let rows = try Self.read(text, .jsonl, maxRowBytes: 64)
        #expect(rows.map(\.line) == [1, 3, 4, 5, 6, 7, 8, 9, 10])
        #expect(try rows[0].row.get() == ImportRawRow(values: [.username: "alice"], recoveryCodes: ["a", "b"]))
        #expect(try rows[1].row.get() == ImportRawRow(values: [.username: "bob"], recoveryCodes: ["c", "d"]))
        #expect(Self.error(rows[2]) == "the line must be a JSON object")
        #expect(Self.error(rows[3]) == "username: must be a string")
        #expect(Self.error(rows[4])?.hasPrefix("not valid JSON (duplicate member name") == true)
        #expect(Self.error(rows[5])?.hasPrefix("password: unknown field") == true)
        #expect(Self.error(rows[6]) == "recoveryCodes: must be an array of strings")
        #expect(Self.error(rows[7])?.hasPrefix("not valid JSON") == true)
        #expect(Self.error(rows[8]) == "the line is longer than 64 bytes")
    }

    @Test("recovery codes split at every space and tab byte, one before a combining mark too")
    func codesSplitAtBytes() {
        #expect(ImportReader.splitCodes("a b\tc  d") == ["a", "b", "c", "d"])
        // " \u{301}" is one Character: a split by Characters kept "x \u{301}y" one code.
        #expect(ImportReader.splitCodes("x \u{301}y") == ["x", "\u{301}y"])
        #expect(ImportReader.splitCodes(" \t ") == nil)
    }

    @Test("JSON Lines from a file read as from memory, lines straddling the read buffer included")
    func jsonLinesFromDescriptor() throws {
        // Rows of varied lengths (one far over the limit, one ending in CR, blank lines) over a few
        // of the reader's 256 KiB reads.
        var text = ""
        var index = 0
        while text.utf8.count < 700_000 {
            let pad = String(repeating: "x", count: (index * 37) % 900)
            switch index % 97 {
            case 13: text += "{\"username\":\"u\(index)\",\"displayName\":\"\(String(repeating: "y", count: 5000))\"}\n"
            case 29: text += "\n  \n"
            case 41: text += "{\"username\":\"u\(index)\"}\r\n"
            default: text += "{\"username\":\"u\(index)\",\"displayName\":\"\(pad)\"}\n"
            }
            index += 1
        }
        text += "{\"username\":\"last\"}"
        let bytes = Array(text.utf8)
        let path = "/tmp/import-reader-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).jsonl"
        #expect(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let descriptor = open(path, O_RDONLY)
        try #require(descriptor >= 0)
        defer { close(descriptor) }

        var fromFile = ImportReader(descriptor: descriptor, format: .jsonl, maxRowBytes: 2000)
        var fromMemory = ImportReader(bytes: bytes, format: .jsonl, maxRowBytes: 2000)
        var rows = 0
        var refused = 0
        while let memory = try fromMemory.next() {
            let file = try #require(try fromFile.next())
            #expect(file.line == memory.line)
            switch (file.row, memory.row) {
            case (.success(let a), .success(let b)): #expect(a == b, "line \(file.line)")
            case (.failure(let a), .failure(let b)):
                #expect(a == b, "line \(file.line)")
                refused += 1
            default: Issue.record("line \(file.line): one reader refused the row, the other did not")
            }
            rows += 1
        }
        #expect(try fromFile.next() == nil)
        #expect(fromFile.bytesRead == Int64(bytes.count))
        #expect(rows > 1000 && refused > 5)
    }

    @Test("random input never crashes the reader, and every row it returns is within the limits")
    func fuzz() throws {
        var generator = SplitMix64(seed: 0x5EED_1234)
        let alphabet = Array("username,email\n\"\r{}[]:,\"ab\\ \u{7f}é".utf8) + [0, 0xff, 0xc3]
        for round in 0..<2000 {
            let length = Int(generator.next() % 300)
            var bytes: [UInt8] = round.isMultiple(of: 2) ? Array("username,email\n".utf8) : []
            for _ in 0..<length {
                let pick = generator.next()
                bytes.append(
                    pick % 4 == 0 ? UInt8(truncatingIfNeeded: pick >> 8) : alphabet[Int(pick >> 8) % alphabet.count]
                )
            }
            for format in ImportFormat.allCases {
                var reader = ImportReader(bytes: bytes, format: format, maxRowBytes: 48)
                var previous: Int64 = 0
                var count = 0
                do {
                    while let row = try reader.next() {
                        #expect(row.line > previous, "lines increase")
                        previous = row.line
                        count += 1
                        if case .success(let raw) = row.row {
                            #expect(raw.values.values.allSatisfy { $0.utf8.count <= 48 })
                        }
                    }
                } catch {
                    // Only a CSV header may stop the reader.
                    #expect(format == .csv && count == 0)
                }
                #expect(count <= bytes.count + 1)
            }
        }
    }
}

/// A small deterministic generator, so a failing fuzz case can be replayed.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
