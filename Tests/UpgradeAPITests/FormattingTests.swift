import Foundation
import Synchronization
import Testing

@testable import UpgradeAPI

@Suite("Timestamps and media types read and written by hand")
struct FormattingTests {
    @Test("RFC 3339 timestamps match Foundation's ISO 8601 output, from 1970 to 2200")
    func timestampsMatchFoundation() {
        var generator = SystemRandomNumberGenerator()
        let samples: [Int64] =
            [0, 59, 951_782_400, 1_709_164_800, 4_102_444_799, 7_258_118_400]
            + (0..<500).map { _ in Int64.random(in: 0...7_258_118_400, using: &generator) }
        for seconds in samples {
            let reference = Date(timeIntervalSince1970: TimeInterval(seconds)).formatted(.iso8601)
            #expect(RFC3339.utc(seconds: seconds) == reference, "\(seconds)")
        }
        #expect(RFC3339.utc(seconds: 1_700_000_000, milliseconds: 7) == "2023-11-14T22:13:20.007Z")
    }

    @Test(
        "Content-Type is application/json in any case, with parameters and spaces around it",
        arguments: [
            ("application/json", true), ("Application/JSON", true), ("application/json; charset=utf-8", true),
            (" application/json ;charset=utf-8", true), ("\tapplication/json", true), ("application/jsonx", false),
            ("application/json-patch+json", false), ("text/json", false), ("", false), (";application/json", false),
            ("application/ json", false),
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
