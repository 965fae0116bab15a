import CLibPQ

/// A result's rows as `SQLValue`s, typed by the column's type: integers, booleans (as 0 or 1),
/// bytea, and text for the rest.
enum PostgresRowDecoder {
    /// Type OIDs from the server's catalog (`pg_type`), fixed since PostgreSQL's first releases.
    private enum TypeOID {
        static let bool: UInt32 = 16
        static let bytea: UInt32 = 17
        static let int8: UInt32 = 20
        static let int2: UInt32 = 21
        static let int4: UInt32 = 23
        static let oid: UInt32 = 26
    }

    private enum ColumnKind { case integer, boolean, bytes, text }

    static func rows(of result: OpaquePointer) -> [[SQLValue]] {
        let rowCount = PQntuples(result)
        let columnCount = PQnfields(result)
        guard rowCount > 0 else { return [] }
        let kinds: [ColumnKind] = (0..<columnCount).map { column in
            switch PQftype(result, column) {
            case TypeOID.int8, TypeOID.int4, TypeOID.int2, TypeOID.oid: .integer
            case TypeOID.bool: .boolean
            case TypeOID.bytea: .bytes
            default: .text
            }
        }
        var rows: [[SQLValue]] = []
        rows.reserveCapacity(Int(rowCount))
        for row in 0..<rowCount {
            var values: [SQLValue] = []
            values.reserveCapacity(Int(columnCount))
            for column in 0..<columnCount {
                guard PQgetisnull(result, row, column) == 0, let pointer = PQgetvalue(result, row, column) else {
                    values.append(.null)
                    continue
                }
                let bytes = UnsafeRawBufferPointer(start: pointer, count: Int(PQgetlength(result, row, column)))
                values.append(decode(bytes, as: kinds[Int(column)]))
            }
            rows.append(values)
        }
        return rows
    }

    private static func decode(_ bytes: UnsafeRawBufferPointer, as kind: ColumnKind) -> SQLValue {
        switch kind {
        case .integer:
            // The server's own text for an integer column: it always parses.
            return .integer(Int64(String(decoding: bytes, as: UTF8.self)) ?? 0)
        case .boolean:
            return .integer(bytes.first == UInt8(ascii: "t") ? 1 : 0)
        case .bytes:
            return .blob(decodeHex(bytes))
        case .text:
            return .text(String(decoding: bytes, as: UTF8.self))
        }
    }

    /// bytea's hex output, `\x` then two digits a byte (`bytea_output = hex` is set in every transaction).
    private static func decodeHex(_ text: UnsafeRawBufferPointer) -> [UInt8] {
        guard text.count >= 2, text[0] == UInt8(ascii: "\\"), text[1] == UInt8(ascii: "x") else { return [] }
        func nibble(_ byte: UInt8) -> UInt8 {
            byte <= UInt8(ascii: "9") ? byte &- UInt8(ascii: "0") : (byte | 0x20) &- UInt8(ascii: "a") &+ 10
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity((text.count - 2) / 2)
        var index = 2
        while index + 1 < text.count {
            bytes.append(nibble(text[index]) << 4 | nibble(text[index + 1]))
            index += 2
        }
        return bytes
    }
}
