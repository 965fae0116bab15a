import Foundation
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// `AuditStore.auditEvents` on every backend: each filter and bound, newest first, and keyset pages
/// that together are the whole answer, once.
@Suite("Storage conformance: audit search")
struct AuditSearchConformanceTests {
    static let start: Int64 = 1_700_000_000

    /// 30 events, one every 10 s: accounts a, b and none in turn, types `x.one` and `x.two` in turn
    /// of three, so every filter keeps some rows and drops others. Returned oldest first, with ids.
    func seed(_ store: any UpgradeStore) throws -> [AuditEvent] {
        try store.write { tx in
            for index in 0..<30 {
                try tx.appendAudit(
                    AuditEvent(
                        at: Self.start + Int64(index) * 10,
                        accountID: [Optional("a"), "b", nil][index % 3],
                        upgradeID: index % 5 == 0 ? "upg_\(index)" : nil,
                        event: index % 6 < 3 ? "x.one" : "x.two",
                        fromStatus: index % 4 == 0 ? "started" : nil,
                        toStatus: index % 4 == 0 ? "failed" : nil,
                        detail: ["n": String(index)]
                    )
                )
            }
        }
        let all = try store.read { try $0.auditEvents(AuditSearch(limit: 1000)) }
        #expect(all.count == 30)
        return all.reversed()
    }

    @Test("no filter: every event, newest first, with what was stored", arguments: Backend.all)
    func everything(_ backend: Backend) throws {
        let db = try backend.database()
        let seeded = try seed(db.store)
        let ids = seeded.compactMap(\.id)
        #expect(ids == ids.sorted() && Set(ids).count == 30, "ids rise with each append")
        #expect(seeded.map(\.detail) == (0..<30).map { ["n": String($0)] })
        #expect(seeded[0].upgradeID == "upg_0" && seeded[0].fromStatus == "started" && seeded[0].toStatus == "failed")
        let first = try db.store.read { try $0.auditEvents(AuditSearch(limit: 5)) }
        #expect(first == Array(seeded.reversed().prefix(5)))
    }

    @Test("each filter alone and together; since inclusive, until exclusive", arguments: Backend.all)
    func filters(_ backend: Backend) throws {
        let db = try backend.database()
        let seeded = try seed(db.store)
        func search(_ search: AuditSearch) throws -> [AuditEvent] {
            try db.store.read { try $0.auditEvents(search) }
        }
        func expected(_ keep: (AuditEvent) -> Bool) -> [AuditEvent] { seeded.reversed().filter(keep) }

        #expect(try search(AuditSearch(accountID: "a")) == expected { $0.accountID == "a" })
        #expect(try search(AuditSearch(accountID: "nobody")).isEmpty)
        #expect(try search(AuditSearch(event: "x.two")) == expected { $0.event == "x.two" })
        #expect(try search(AuditSearch(event: "x.")).isEmpty, "the type matches exactly, not as a prefix")
        let since = Self.start + 100
        let until = Self.start + 200
        #expect(try search(AuditSearch(since: since)) == expected { $0.at >= since })
        #expect(try search(AuditSearch(since: since)).last?.at == since, "since is inclusive")
        #expect(try search(AuditSearch(until: until)) == expected { $0.at < until })
        #expect(try search(AuditSearch(until: until)).first?.at == until - 10, "until is exclusive")
        #expect(try search(AuditSearch(since: until, until: since)).isEmpty)
        let all = AuditSearch(accountID: "b", event: "x.one", since: since, until: until)
        let both = expected { $0.accountID == "b" && $0.event == "x.one" && $0.at >= since && $0.at < until }
        #expect(!both.isEmpty && both.count < 10)
        #expect(try search(all) == both)
        let middle = seeded[15].id!
        #expect(try search(AuditSearch(beforeID: middle)) == expected { $0.id! < middle })
    }

    @Test(
        "keyset pages: no duplicates, no gaps, newest first, and rows appended meanwhile do not shift them",
        arguments: Backend.all
    )
    func pages(_ backend: Backend) throws {
        let db = try backend.database()
        let seeded = try seed(db.store)
        // Each filter pages over what was there when its first page was read.
        for filter in [
            AuditSearch(limit: 4), AuditSearch(accountID: "a", limit: 3), AuditSearch(event: "x.one", limit: 7),
        ] {
            let whole = try db.store.read { tx in
                var everything = filter
                everything.limit = 1000
                return try tx.auditEvents(everything)
            }
            var collected: [AuditEvent] = []
            var search = filter
            var pages = 0
            while true {
                let page = try db.store.read { try $0.auditEvents(search) }
                #expect(page.count <= filter.limit)
                collected += page
                pages += 1
                guard page.count == filter.limit, let last = page.last?.id else { break }
                // A row appended between pages has a higher id: it is not in any later page.
                if pages == 1 {
                    try db.store.write {
                        try $0.appendAudit(
                            AuditEvent(at: Self.start, accountID: "a", upgradeID: nil, event: "x.one")
                        )
                    }
                }
                search.beforeID = last
                #expect(pages < 40)
            }
            #expect(collected == whole)
            #expect(whole.count > filter.limit && whole.count <= seeded.count + 1)
            #expect(Set(collected.compactMap(\.id)).count == collected.count)
            #expect(collected.compactMap(\.id) == collected.compactMap(\.id).sorted(by: >))
        }
    }
}
