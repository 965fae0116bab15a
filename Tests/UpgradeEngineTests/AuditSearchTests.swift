import Testing

@testable import UpgradeEngine

@Suite("Audit search: tamper-evident cursors and time bounds")
struct AuditSearchTests {
    static let cursors = AuditCursors(secrets: try! SecretBox(key: [UInt8](repeating: 7, count: 32)))

    @Test("a cursor round-trips its id; anything else, the bare base64url of an id included, is refused")
    func cursors() throws {
        for id: Int64 in [1, 255, 256, 1_000_000_007, .max] {
            let cursor = Self.cursors.cursor(afterID: id)
            #expect(cursor.utf8.count == AuditCursors.encodedLength && cursor.utf8.count <= 64)
            #expect(Self.cursors.id(cursor: cursor) == id)
        }
        let good = Self.cursors.cursor(afterID: 42)
        // What the cursor was before it carried a tag: the base64url of an id's 8 bytes.
        let bare = Base64URL.encode([0, 0, 0, 0, 0, 0, 0, 42])
        var forgedID = try #require(Base64URL.decode(good))
        forgedID[8] = 41
        var forgedTag = try #require(Base64URL.decode(good))
        forgedTag[forgedTag.count - 1] ^= 1
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        let otherKey = AuditCursors(secrets: try SecretBox(key: [UInt8](repeating: 8, count: 32)))
        let refused = [
            "", bare, "AAAAAAAAAC9", good + "A", String(good.dropLast()), good + "=", "42",
            Base64URL.encode(forgedID), Base64URL.encode(forgedTag), otherKey.cursor(afterID: 42),
            Self.cursors.cursor(afterID: 0), Self.cursors.cursor(afterID: -1),
            // Another spelling of the same bytes: a stray low bit in the last symbol.
            String(good.dropLast()) + String(alphabet[alphabet.firstIndex(of: good.last!)! + 1]),
        ]
        for text in refused { #expect(Self.cursors.id(cursor: text) == nil, "\(text)") }
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
