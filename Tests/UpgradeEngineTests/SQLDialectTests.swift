import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// The one spelling of parameters the aggregates' SQL uses (`$1`, `$2`, ...), as each backend reads it.
@Suite("SQL dialect")
struct SQLDialectTests {
    @Test("SQLite reads $n as ?n outside quotes; a JSON path or a quoted $1 stays; PostgreSQL's text is unchanged")
    func placeholders() {
        let sql = "SELECT json_extract(d, '$.sub'), '$1', $1 FROM t WHERE a = $12 AND b = $2 AND c IS NOT $1"
        #expect(
            SQLDialect.sqlite.placeholders(in: sql)
                == "SELECT json_extract(d, '$.sub'), '$1', ?1 FROM t WHERE a = ?12 AND b = ?2 AND c IS NOT ?1"
        )
        #expect(SQLDialect.postgres.placeholders(in: sql) == sql)
    }

    @Test(
        "a statement that names $2 before $1, and $1 twice, binds each argument by its number",
        arguments: Backend.all
    )
    func numberedArguments(backend: Backend) throws {
        let db = try backend.database()
        let row = try db.store.read { tx -> [[SQLValue]]? in
            guard let sql = tx as? any SQLTransaction else { return nil }
            let (first, second) = (sql.dialect.parameter(1, as: "text"), sql.dialect.parameter(2, as: "text"))
            return try sql.rows("SELECT \(second) || '-' || \(first) || '-' || $1", [.text("a"), .text("b")])
        }
        #expect(row == [[.text("b-a-a")]])
    }
}
