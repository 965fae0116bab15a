import Foundation
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// Sealed values by key id (`SealedValueStore`): counted in SQL, paged, replaced compare-and-set.
extension StoreConformanceTests {
    static let oldBox = try! SecretBox(keys: [("k1", Array(repeating: 1, count: 32))])
    static let newBox = try! SecretBox(keys: [
        ("k2", Array(repeating: 2, count: 32)), ("k1", Array(repeating: 1, count: 32)),
    ])

    /// Three TOTP secrets (one of format 1, under key 0), two links (one without a token), one pending
    /// and one done revocation, one parameter set.
    func seedSealedValues(_ store: any UpgradeStore) throws -> [AccountRecord] {
        let accounts = (0..<3).map { account("sealed-\($0)", id: "acct-\($0)") }
        let legacy = try SecretBox(key: Array(repeating: 0, count: 32))
        try store.write { tx in
            for (index, account) in accounts.enumerated() {
                try tx.insertAccount(account)
                var enrollment = enrollment(account)
                let context = UpgradeService.totpContext(accountID: account.id)
                enrollment.secretCiphertext =
                    index == 2
                    ? try legacy.sealVersion1([UInt8(index)], context: context, nonce: Array(repeating: 0, count: 12))
                    : Self.oldBox.seal([UInt8(index)], context: context)
                try tx.upsertTOTPEnrollment(enrollment)
            }
            var withToken = link(accounts[0].id, sub: "001.sealed.0")
            withToken.refreshTokenCiphertext = Self.oldBox.seal(
                Array("r0".utf8),
                context: UpgradeService.refreshTokenContext(accountID: accounts[0].id)
            )
            try tx.insertAppleLink(withToken)
            try tx.insertAppleLink(link(accounts[1].id, sub: "001.sealed.1"))
            var pending = revocation("rev-pending", accountID: "gone")
            pending.tokenCiphertext = Self.newBox.seal(
                Array("r-gone".utf8),
                context: UpgradeService.refreshTokenContext(accountID: "gone")
            )
            try tx.insertAppleRevocation(pending)
            var done = revocation("rev-done", accountID: "gone-too")
            done.tokenCiphertext = Self.oldBox.seal([1], context: "x")
            try tx.insertAppleRevocation(done)
            _ = try tx.finishAppleRevocation(id: "rev-done", now: Self.now, note: nil)
            try tx.insertHashParameterSet(
                HashParameterSetRecord(
                    id: 1,
                    kind: "hmac",
                    sealed: Self.oldBox.seal([5], context: HashParameterSet.sealingContext(id: 1)),
                    createdAt: Self.now
                )
            )
        }
        return accounts
    }

    @Test(
        "sealed values are counted per kind and key id from their headers; emptied ones are not",
        arguments: Backend.all
    )
    func sealedValueCounts(_ backend: Backend) throws {
        let db = try backend.database()
        #expect(try db.store.read { try $0.sealedValueCounts() } == [])
        _ = try seedSealedValues(db.store)
        try db.store.write { tx in
            // A value that is no sealed value this build knows counts under `?`.
            try tx.insertHashParameterSet(HashParameterSetRecord(id: 2, kind: "hmac", sealed: [7, 7], createdAt: 0))
        }
        let counts = Set(try db.store.read { try $0.sealedValueCounts() })
        #expect(
            counts == [
                SealedValueCount(kind: .totpSecret, keyID: "k1", count: 2),
                SealedValueCount(kind: .totpSecret, keyID: "0", count: 1),
                SealedValueCount(kind: .appleRefreshToken, keyID: "k1", count: 1),
                SealedValueCount(kind: .appleRevocationToken, keyID: "k2", count: 1),
                SealedValueCount(kind: .hashParameters, keyID: "k1", count: 1),
                SealedValueCount(kind: .hashParameters, keyID: "?", count: 1),
            ]
        )
    }

    @Test("values not under a key are read in pages by row key, with their sealing owner", arguments: Backend.all)
    func sealedValuePages(_ backend: Backend) throws {
        let db = try backend.database()
        let accounts = try seedSealedValues(db.store)
        let first = try db.store.read { try $0.sealedValues(.totpSecret, notUnder: "k2", after: nil, limit: 2) }
        #expect(first.map(\.key) == [accounts[0].id, accounts[1].id])
        #expect(first.map(\.owner) == first.map(\.key))
        let rest = try db.store.read {
            try $0.sealedValues(.totpSecret, notUnder: "k2", after: first.last?.key, limit: 2)
        }
        #expect(rest.map(\.key) == [accounts[2].id])
        #expect(
            try db.store.read { try $0.sealedValues(.totpSecret, notUnder: "k1", after: nil, limit: 10) }.map(\.key)
                == [accounts[2].id]
        )
        #expect(try db.store.read { try $0.sealedValues(.totpSecret, notUnder: "0", after: nil, limit: 10) }.count == 2)
        let links = try db.store.read { try $0.sealedValues(.appleRefreshToken, notUnder: "k2", after: nil, limit: 10) }
        #expect(links.map(\.key) == [accounts[0].id], "a link without a token has no value")
        #expect(
            try Self.newBox.open(
                links[0].sealed,
                context: UpgradeService.refreshTokenContext(accountID: links[0].owner)
            ) == Array("r0".utf8)
        )
        let revocations = try db.store.read {
            try $0.sealedValues(.appleRevocationToken, notUnder: "k1", after: nil, limit: 10)
        }
        #expect(revocations.map(\.key) == ["rev-pending"], "a done revocation's emptied value is skipped")
        #expect(revocations.map(\.owner) == ["gone"])
        #expect(
            try db.store.read { try $0.sealedValues(.appleRevocationToken, notUnder: "k2", after: nil, limit: 10) }
                == []
        )
        let sets = try db.store.read { try $0.sealedValues(.hashParameters, notUnder: "k2", after: nil, limit: 10) }
        #expect(sets.map(\.key) == ["1"])
        #expect(sets.map(\.owner) == ["1"])
        #expect(try db.store.read { try $0.sealedValues(.hashParameters, notUnder: "k2", after: "1", limit: 10) } == [])
    }

    @Test("a sealed value is replaced only while it is still the one read", arguments: Backend.all)
    func replaceSealedValue(_ backend: Backend) throws {
        let db = try backend.database()
        let accounts = try seedSealedValues(db.store)
        for kind in SealedValueKind.allCases {
            let values = try db.store.read { try $0.sealedValues(kind, notUnder: "k2", after: nil, limit: 10) }
            for value in values {
                #expect(
                    try !db.store.write {
                        try $0.replaceSealedValue(kind, key: value.key, expected: [9, 9], replacement: [4])
                    },
                    "a value that changed since it was read is left alone"
                )
                let replacement = Self.newBox.seal([1], context: "\(kind)")
                #expect(
                    try db.store.write {
                        try $0.replaceSealedValue(
                            kind,
                            key: value.key,
                            expected: value.sealed,
                            replacement: replacement
                        )
                    }
                )
                #expect(
                    try !db.store.write {
                        try $0.replaceSealedValue(kind, key: value.key, expected: value.sealed, replacement: [4])
                    }
                )
            }
        }
        #expect(
            try !db.store.write {
                try $0.replaceSealedValue(.totpSecret, key: "absent", expected: [1], replacement: [2])
            }
        )
        #expect(
            try !db.store.write {
                try $0.replaceSealedValue(.hashParameters, key: "not-a-number", expected: [1], replacement: [2])
            }
        )
        let counts = try db.store.read { try $0.sealedValueCounts() }
        #expect(counts.allSatisfy { $0.keyID == "k2" }, "\(counts)")
        #expect(counts.map(\.count).reduce(0, +) == 6)
        // The rows' other columns and versions are as they were.
        let link = try #require(try db.store.read { try $0.appleLink(accountID: accounts[0].id) })
        #expect(link.version == 1)
    }
}
