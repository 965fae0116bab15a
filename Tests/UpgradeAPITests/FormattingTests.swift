import Foundation
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
