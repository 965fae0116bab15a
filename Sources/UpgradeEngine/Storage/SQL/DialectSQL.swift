/// One of the few statements whose text differs by backend beyond what `SQLDialect` spells inside
/// a shared text: rendered for both dialects once, when the `static let` holding it is first read.
struct DialectSQL: Sendable {
    private let sqlite: String
    private let postgres: String

    init(_ render: (SQLDialect) -> String) {
        sqlite = render(.sqlite)
        postgres = render(.postgres)
    }

    init(sqlite: String, postgres: String) {
        self.sqlite = sqlite
        self.postgres = postgres
    }

    subscript(dialect: SQLDialect) -> String {
        switch dialect {
        case .sqlite: sqlite
        case .postgres: postgres
        }
    }
}
