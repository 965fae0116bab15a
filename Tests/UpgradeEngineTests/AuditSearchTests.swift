import Testing

@testable import UpgradeEngine

@Suite("Audit search: cursors and time bounds")
struct AuditSearchTests {
    @Test("a cursor round-trips its id; anything else is refused")
    func cursors() {
        for id: Int64 in [1, 255, 256, 1_000_000_007, .max] {
            let cursor = AuditSearch.cursor(afterID: id)
            #expect(cursor.utf8.count == 11)
            #expect(AuditSearch.id(cursor: cursor) == id)
        }
        let good = AuditSearch.cursor(afterID: 42)
        let refused = [
            "", "AAAAAAAAAAA", good + "A", String(good.dropLast()), good + "=", "AAAAAAAAAC9",  // stray low bits
            "AAAAAAAAAC+", "AAAAAAAA AC", "42", "gAAAAAAAAAA",  // negative
        ]
        for text in refused { #expect(AuditSearch.id(cursor: text) == nil, "\(text)") }
    }

    @Test("times: Unix seconds or RFC 3339 with an offset")
    func times() {
        #expect(AuditSearch.time("2026-11-24T10:00:00Z") == 1_795_514_400)
        #expect(AuditSearch.time("2026-11-24t10:00:00z") == 1_795_514_400)
        #expect(AuditSearch.time("2026-11-24T11:30:00+01:30") == 1_795_514_400)
        #expect(AuditSearch.time("2026-11-24T08:00:00-02:00") == 1_795_514_400)
        #expect(AuditSearch.time("2026-11-24T10:00:00.999Z") == 1_795_514_400)
        #expect(AuditSearch.time("1795514400") == 1_795_514_400)
        #expect(AuditSearch.time("0") == 0)
        #expect(AuditSearch.time("1970-01-01T00:00:00Z") == 0)
        #expect(AuditSearch.time("2024-02-29T00:00:00Z") == 1_709_164_800)
        #expect(AuditSearch.time("2000-03-01T00:00:00Z") == 951_868_800)
        let refused = [
            "", " 0", "-1", "1e9", "1795514400.5", "2026-11-24", "2026-11-24T10:00:00", "2026-11-24 10:00:00Z",
            "2026-13-01T00:00:00Z", "2026-02-29T00:00:00Z", "2100-02-29T00:00:00Z", "2026-04-31T00:00:00Z",
            "2026-11-24T24:00:00Z", "2026-11-24T10:60:00Z", "2026-11-24T10:00:61Z", "2026-11-24T10:00:00.Z",
            "2026-11-24T10:00:00+0100", "2026-11-24T10:00:00+24:00", "2026-11-24T10:00:00Zx", "9999999999999",
        ]
        for text in refused { #expect(AuditSearch.time(text) == nil, "\(text)") }
    }
}
