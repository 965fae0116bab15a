/// Sealed values by key id: the id is read off the value's header (`SecretBox`, format versions 1
/// and 2) by the SQL itself.
extension SQLTransaction {
    func sealedValueCounts() throws(StorageError) -> [SealedValueCount] {
        try rows(SealedValueSQL.counts).compactMap { row in
            guard let kind = row[0].string.flatMap(SealedValueKind.init(rawValue:)) else { return nil }
            return SealedValueCount(kind: kind, keyID: row[1].string ?? "?", count: row[2].int ?? 0)
        }
    }

    func sealedValues(
        _ kind: SealedValueKind,
        notUnder keyID: String,
        after: String?,
        limit: Int
    ) throws(StorageError) -> [SealedValueRecord] {
        let table = SealedValueSQL.Table.of(kind)
        let start: SQLValue = table.integerKey ? .integer(after.flatMap { Int64($0) } ?? 0) : .text(after ?? "")
        return try rows(table.batch, [start, .text(keyID), .integer(Int64(max(limit, 0)))]).map { row in
            SealedValueRecord(
                kind: kind,
                key: row[0].string ?? row[0].int.map(String.init) ?? "",
                owner: row[1].string ?? row[1].int.map(String.init) ?? "",
                sealed: row[2].bytes ?? []
            )
        }
    }

    func replaceSealedValue(
        _ kind: SealedValueKind,
        key: String,
        expected: [UInt8],
        replacement: [UInt8]
    ) throws(StorageError) -> Bool {
        let table = SealedValueSQL.Table.of(kind)
        let rowKey: SQLValue
        if table.integerKey {
            guard let id = Int64(key) else { return false }
            rowKey = .integer(id)
        } else {
            rowKey = .text(key)
        }
        try rows(table.replace, [.blob(replacement), rowKey, .blob(expected)])
        return changes == 1
    }

    func keyChecks() throws(StorageError) -> [String: [UInt8]] {
        var checks: [String: [UInt8]] = [:]
        for row in try rows("SELECT key_id, sealed FROM key_checks") {
            if let id = row[0].string { checks[id] = row[1].bytes ?? [] }
        }
        return checks
    }

    func insertKeyCheck(keyID: String, sealed: [UInt8], now: Int64) throws(StorageError) -> Bool {
        try rows(
            "INSERT INTO key_checks (key_id, sealed, created_at) VALUES ($1, $2, $3) ON CONFLICT (key_id) DO NOTHING",
            [.text(keyID), .blob(sealed), .integer(now)]
        )
        return changes == 1
    }
}

private enum SealedValueSQL {
    /// Where each kind lives, and its statements.
    struct Table {
        let kind: SealedValueKind
        let name: String
        let key: String
        let owner: String
        let column: String
        /// A condition that leaves out rows with no value (NULL, or emptied when done).
        let present: String
        let integerKey: Bool

        var batch: DialectSQL {
            DialectSQL { dialect in
                """
                SELECT \(key), \(owner), \(column) FROM \(name)
                WHERE \(key) > $1 AND \(present) AND \(SealedValueSQL.keyID(column, dialect)) <> $2
                ORDER BY \(key) LIMIT $3
                """
            }
        }

        var replace: String {
            "UPDATE \(name) SET \(column) = $1 WHERE \(key) = $2 AND \(column) = $3"
        }

        static let all = [
            Table(
                kind: .totpSecret,
                name: "totp_enrollments",
                key: "account_id",
                owner: "account_id",
                column: "secret_ciphertext",
                present: "TRUE",
                integerKey: false
            ),
            Table(
                kind: .appleRefreshToken,
                name: "apple_links",
                key: "account_id",
                owner: "account_id",
                column: "refresh_token_ciphertext",
                present: "refresh_token_ciphertext IS NOT NULL",
                integerKey: false
            ),
            Table(
                kind: .appleRevocationToken,
                name: "apple_revocations",
                key: "id",
                owner: "account_id",
                column: "token_ciphertext",
                present: "length(token_ciphertext) > 0",
                integerKey: false
            ),
            Table(
                kind: .hashParameters,
                name: "hash_parameter_sets",
                key: "id",
                owner: "id",
                column: "sealed",
                present: "TRUE",
                integerKey: true
            ),
        ]

        /// Rendered once each (statements are found again by their text).
        private static let rendered: [SealedValueKind: Rendered] = Dictionary(
            uniqueKeysWithValues: all.map { ($0.kind, Rendered(table: $0, batch: $0.batch, replace: $0.replace)) }
        )

        static func of(_ kind: SealedValueKind) -> Rendered { rendered[kind]! }
    }

    struct Rendered {
        let table: Table
        let batch: DialectSQL
        let replace: String
        var integerKey: Bool { table.integerKey }
    }

    static let counts = DialectSQL { dialect in
        Table.all.map { table in
            """
            SELECT '\(table.kind.rawValue)', \(keyID(table.column, dialect)), COUNT(*) FROM \(table.name) \
            WHERE \(table.present) GROUP BY 2
            """
        }.joined(separator: " UNION ALL ") + " ORDER BY 1, 2"
    }

    /// The key id of the value in `column`: `0` for version 1, the bytes between the version and the
    /// first 0x00 for version 2, `?` for anything else.
    static func keyID(_ column: String, _ dialect: SQLDialect) -> String {
        switch dialect {
        case .sqlite:
            """
            (CASE WHEN substr(\(column), 1, 1) = X'01' THEN '0' \
            WHEN substr(\(column), 1, 1) = X'02' AND instr(\(column), X'00') > 2 \
            THEN CAST(substr(\(column), 2, instr(\(column), X'00') - 2) AS TEXT) ELSE '?' END)
            """
        case .postgres:
            """
            (CASE WHEN length(\(column)) = 0 THEN '?' WHEN get_byte(\(column), 0) = 1 THEN '0' \
            WHEN get_byte(\(column), 0) = 2 AND position(decode('00', 'hex') IN \(column)) > 2 \
            THEN encode(substring(\(column) FROM 2 FOR position(decode('00', 'hex') IN \(column)) - 2), 'escape') \
            ELSE '?' END)
            """
        }
    }
}
