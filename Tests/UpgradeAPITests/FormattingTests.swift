import Foundation
import Synchronization
import Testing
import UpgradeEngine

@testable import UpgradeAPI

@Suite("Timestamps and media types read and written by hand")
struct FormattingTests {
    @Test("RFC 3339 timestamps match Foundation's ISO 8601 output, from 1583 (Gregorian throughout) to 9999")
    func timestampsMatchFoundation() {
        var generator = SystemRandomNumberGenerator()
        let samples: [Int64] =
            [
                0, 59, -1, -86_400, -86_401, 951_782_400, 951_868_799, 1_709_164_800, 4_102_444_799, 7_258_118_400,
                -12_212_553_600, 253_402_300_799,
            ]
            + (0..<500).map { _ in Int64.random(in: 0...7_258_118_400, using: &generator) }
            + (0..<500).map { _ in Int64.random(in: -12_212_553_600...253_402_300_799, using: &generator) }
        for seconds in samples {
            let reference = Date(timeIntervalSince1970: TimeInterval(seconds)).formatted(.iso8601)
            #expect(RFC3339.utc(seconds: seconds) == reference, "\(seconds)")
        }
        #expect(RFC3339.utc(seconds: 1_700_000_000, milliseconds: 7) == "2023-11-14T22:13:20.007Z")
        #expect(RFC3339.utc(seconds: -1, milliseconds: 999) == "1969-12-31T23:59:59.999Z")
        // RFC 3339 has four-digit years: anything outside them is held at the first or last second.
        #expect(RFC3339.utc(seconds: .min) == "0000-01-01T00:00:00Z")
        #expect(RFC3339.utc(seconds: .max) == "9999-12-31T23:59:59Z")
    }

    @Test("request ids print as sixteen lowercase hex digits")
    func requestIDs() {
        #expect(HTTPRequestID(rawValue: 0).description == "0000000000000000")
        #expect(HTTPRequestID(rawValue: 0xabc).description == "0000000000000abc")
        #expect(HTTPRequestID(rawValue: .max).description == "ffffffffffffffff")
        #expect(HTTPRequestID(rawValue: 0x0123_4567_89ab_cdef).description == "0123456789abcdef")
    }

    @Test("a log line is one JSON object: time, level, message, then the fields in order, escaped")
    func logLine() throws {
        let lines = Mutex<[String]>([])
        let log = RequestLog(write: { line in lines.withLock { $0.append(line) } })
        log.log(
            "info",
            "request \"quoted\"",
            [("route", .string("/v1/x\n")), ("status", .integer(201)), ("ms", .double(1.5))]
        )
        let line = try #require(lines.withLock { $0.first })
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["level"] as? String == "info")
        #expect(object["msg"] as? String == "request \"quoted\"")
        #expect(object["route"] as? String == "/v1/x\n")
        #expect(object["status"] as? Int == 201)
        #expect(object["ms"] as? Double == 1.5)
        let ts = try #require(object["ts"] as? String)
        #expect(ts.utf8.count == 24 && ts.hasSuffix("Z"))
        #expect(line.hasPrefix(#"{"ts":""#))
        #expect(line.range(of: #""route""#)!.lowerBound < line.range(of: #""status""#)!.lowerBound)
    }

    @Test(
        "Content-Type is application/json in any case, with parameters and spaces around it, and UTF-8 if it names a charset",
        arguments: [
            ("application/json", true), ("Application/JSON", true), ("application/json; charset=utf-8", true),
            (" application/json ;charset=utf-8", true), ("\tapplication/json", true), ("application/jsonx", false),
            ("application/json-patch+json", false), ("text/json", false), ("", false), (";application/json", false),
            ("application/ json", false), ("application\u{0F}json", false), ("APPLICATION/JSON", true),
            ("applicatioN/jsoN", true), ("application/js@n", false), ("applicatio\u{0E}/json", false),
            ("application/json; charset=UTF-8", true), ("application/json; charset=\"utf-8\"", true),
            ("application/json;CHARSET=Utf-8 ", true), ("application/json; version=2", true),
            ("application/json;", true),
            ("application/json; charset=utf-16", false), ("application/json; charset=\"UTF-16LE\"", false),
            ("application/json; charset=iso-8859-1", false), ("application/json; charset=utf8", false),
            ("application/json; charset=", false), ("application/json; charset", false),
            ("application/json; version=2; charset=latin1", false), ("application/json; charset=utf-8x", false),
        ]
    )
    func mediaType(value: String, accepted: Bool) {
        #expect(JSONBody.isJSON(contentType: value) == accepted)
    }

    @Test("no Content-Type is not JSON")
    func missingMediaType() {
        #expect(!JSONBody.isJSON(contentType: nil))
    }
}

@Suite("LogBuffer: request logs written in batches")
struct LogBufferTests {
    final class Sink: Sendable {
        let batches = Mutex<[String]>([])
        func take(_ bytes: [UInt8]) { batches.withLock { $0.append(String(decoding: bytes, as: UTF8.self)) } }
    }

    @Test("lines wait until flush, then leave whole and in order")
    func flushWritesInOrder() {
        let sink = Sink()
        let buffer = LogBuffer(capacity: 1024, interval: .seconds(3600), sink: sink.take)
        buffer.write(#"{"n":1}"#)
        buffer.write(#"{"n":2}"#)
        #expect(sink.batches.withLock { $0.isEmpty })
        buffer.flush()
        buffer.flush()
        #expect(sink.batches.withLock { $0 } == ["{\"n\":1}\n{\"n\":2}\n"])
    }

    @Test("a full buffer is written without waiting for the interval")
    func capacityTriggersWrite() {
        let sink = Sink()
        let buffer = LogBuffer(capacity: 32, interval: .seconds(3600), sink: sink.take)
        let line = String(repeating: "x", count: 20)
        buffer.write(line)
        #expect(sink.batches.withLock { $0.isEmpty })
        buffer.write(line)
        #expect(sink.batches.withLock { $0 } == [line + "\n" + line + "\n"])
    }

    @Test("lines written from many threads all arrive, each whole")
    func concurrentWriters() {
        let sink = Sink()
        let buffer = LogBuffer(capacity: 256, interval: .seconds(3600), sink: sink.take)
        DispatchQueue.concurrentPerform(iterations: 400) { index in buffer.write("line \(index)") }
        buffer.flush()
        let lines = sink.batches.withLock { $0.joined() }.split(separator: "\n")
        #expect(Set(lines) == Set((0..<400).map { "line \($0)" }[...].map { Substring($0) }))
        #expect(lines.count == 400)
    }
}
