/// An INSERT written once for one row and once for `chunk` rows, for writing many rows in a few
/// statements: each statement has its own fixed text, so both backends prepare it once.
///
/// A statement of many rows keeps its table's and indexes' cursors open from row to row, so rows
/// whose keys increase are appended without a search from the root per row, and the per-statement
/// work (binding, stepping, resetting; on PostgreSQL a Bind and Execute) is paid once per chunk.
struct MultiRowInsert: Sendable {
    static let chunk = 100

    let columns: Int
    /// The INSERT of one row, and of `chunk` rows.
    let one: String
    let many: String

    /// `head` names the table and its columns (`INSERT INTO t (a, b)`); `tail` follows the rows (an
    /// `ON CONFLICT` clause).
    init(_ head: String, columns: Int, tail: String = "") {
        self.columns = columns
        func statement(rows: Int) -> String {
            let values = (0..<rows).map { row in
                "(" + (1...columns).map { "$\(row * columns + $0)" }.joined(separator: ", ") + ")"
            }
            return head + " VALUES " + values.joined(separator: ", ") + (tail.isEmpty ? "" : " " + tail)
        }
        one = statement(rows: 1)
        many = statement(rows: Self.chunk)
    }

    /// Runs `run` with each statement and its values until every item is written: whole chunks
    /// first, then the rest one row at a time.
    func write<Item: InsertableRow>(
        _ items: [Item],
        run: (String, [SQLValue]) throws(StorageError) -> Void
    ) throws(StorageError) {
        var values: [SQLValue] = []
        values.reserveCapacity(columns * Self.chunk)
        var start = items.startIndex
        while items.endIndex - start >= Self.chunk {
            values.removeAll(keepingCapacity: true)
            for item in items[start..<start + Self.chunk] { item.appendRow(to: &values) }
            try run(many, values)
            start += Self.chunk
        }
        for item in items[start...] {
            values.removeAll(keepingCapacity: true)
            item.appendRow(to: &values)
            try run(one, values)
        }
    }
}
