import Foundation

extension MigrationReport {
    /// The report as one JSON document, keys sorted: what `upgrade-cli report --json` prints and
    /// `GET /v1/admin/report` answers, byte for byte. Absent values (`since`, a rate over nothing,
    /// a median of no completion) are left out.
    public var jsonDocument: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Every member is a string, integer, double or a container of them: encoding cannot fail.
        let data = (try? encoder.encode(self)) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    /// The report a `jsonDocument` holds; nil when `text` is not one.
    public init?(jsonDocument text: String) {
        guard let report = try? JSONDecoder().decode(MigrationReport.self, from: Data(text.utf8)) else { return nil }
        self = report
    }
}
