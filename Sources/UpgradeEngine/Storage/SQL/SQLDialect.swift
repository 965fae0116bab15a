/// What differs between the two backends' SQL, so that each aggregate's statements are written once
/// (`SQLTransaction+Accounts.swift` and the other `+X` files).
///
/// Parameters are written `$1`, `$2`, ... as PostgreSQL numbers them, and a number may be repeated.
/// SQLite spells them `?1`, `?2`: `placeholders(in:)` rewrites a statement when its connection
/// prepares it, once, since statements are cached by their text. Everything else here is one of the
/// few constructs the two spell differently.
enum SQLDialect: Sendable {
    case sqlite
    case postgres

    /// The statement as this backend spells its parameters. Outside quotes, a `$` before a digit is
    /// a parameter; `'$.sub'` is a JSON path and stays.
    func placeholders(in sql: String) -> String {
        guard self == .sqlite, sql.utf8.contains(UInt8(ascii: "$")) else { return sql }
        var bytes = Array(sql.utf8)
        var quoted = false
        for index in bytes.indices {
            if bytes[index] == UInt8(ascii: "'") {
                quoted.toggle()
            } else if !quoted, bytes[index] == UInt8(ascii: "$"), index + 1 < bytes.count,
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index + 1])
            {
                bytes[index] = UInt8(ascii: "?")
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Parameter `number` where the statement gives PostgreSQL no column to infer its type from.
    func parameter(_ number: Int, as type: String) -> String {
        self == .sqlite ? "$\(number)" : "$\(number)::\(type)"
    }

    /// A subquery of the strings in the JSON array that parameter `number` holds.
    func jsonStrings(_ number: Int) -> String {
        self == .sqlite
            ? "SELECT value FROM json_each($\(number))" : "SELECT jsonb_array_elements_text($\(number)::jsonb)"
    }

    /// An empty BLOB (BYTEA).
    var emptyBytes: String { self == .sqlite ? "X''" : "''::bytea" }

    /// Whether a versioned UPDATE leaves indexed columns out and sets each apart, only when its value
    /// changes (`SQLTransaction.setIndexedColumn`). SQLite deletes and reinserts the index entry of
    /// every column an UPDATE names, even one set to its own value; PostgreSQL adds index entries only
    /// for a row whose indexed values changed (a heap-only update otherwise), so it sets them together.
    var setsIndexedColumnsApart: Bool { self == .sqlite }
}
