import Foundation
import UpgradeEngine

/// The admin read routes: audit search (scope `audit`) and the account overview (scope
/// `accounts`). Both check the token before anything else, so an unauthenticated caller learns
/// nothing, not even whether its query was well formed.
extension UpgradeAPIHandler {
    static let auditParameters: Set<String> = ["account", "type", "since", "until", "limit", "cursor"]

    /// `GET /v1/admin/audit?account=&type=&since=&until=&limit=&cursor=`.
    func searchAudit(_ request: HTTPRequest, now: Int64) throws -> HTTPResponse {
        _ = try admin.authorize(request, scope: .audit, now: now)
        let query = try Self.strictQuery(request.query, allowed: Self.auditParameters)
        var search = AuditSearch(
            event: query["type"],
            since: try query["since"].map { try Self.time($0, "since") },
            until: try query["until"].map { try Self.time($0, "until") }
        )
        if let limit = query["limit"] {
            guard limit.utf8.count <= 4, limit.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let value = Int(limit),
                AuditSearch.limits.contains(value)
            else {
                throw APIProblem.validation(
                    "limit must be a whole number from \(AuditSearch.limits.lowerBound) to \(AuditSearch.limits.upperBound)"
                )
            }
            search.limit = value
        }
        if let cursor = query["cursor"] {
            guard let id = auditCursors.id(cursor: cursor) else {
                throw APIProblem.validation("cursor is not one this server handed out; pass nextCursor unchanged")
            }
            search.beforeID = id
        }
        let page = try adminQueries.searchAudit(username: query["account"], search)
        return Self.noStoreJSON(AdminJSON.page(page, cursors: auditCursors))
    }

    /// `GET /v1/admin/report?since=&until=` (scope `audit`): the document `upgrade-cli report --json` prints.
    func migrationReport(_ request: HTTPRequest, now: Int64) throws -> HTTPResponse {
        _ = try admin.authorize(request, scope: .audit, now: now)
        let query = try Self.strictQuery(request.query, allowed: ["since", "until"])
        let report = try ReportService(store: store).report(
            since: try query["since"].map { try Self.time($0, "since") },
            until: try query["until"].map { try Self.time($0, "until") },
            now: now
        )
        return HTTPResponse(
            status: 200,
            headers: ["Content-Type": "application/json", "Cache-Control": "no-store"],
            body: Array(report.jsonDocument.utf8)
        )
    }

    /// `GET /v1/admin/accounts/{username}`: `username` as the router decoded it.
    func accountOverview(_ request: HTTPRequest, username: String?, now: Int64) throws -> HTTPResponse {
        _ = try admin.authorize(request, scope: .accounts, now: now)
        let username = try Self.pathUsername(username)
        return Self.noStoreJSON(AdminJSON.overview(try adminQueries.account(username: username)))
    }

    /// The `{username}` path segment the router decoded (nil: it was not percent-encoded UTF-8),
    /// looked at only once the admin token is checked.
    static func pathUsername(_ username: String?) throws -> String {
        guard let username else {
            throw APIProblem.validation("the username in the path is not valid percent-encoded UTF-8")
        }
        return username
    }

    static func time(_ text: String, _ name: String) throws -> Int64 {
        guard let seconds = AuditSearch.time(text) else {
            throw APIProblem.validation("\(name) must be an RFC 3339 date-time (2026-11-24T10:00:00Z) or Unix seconds")
        }
        return seconds
    }

    /// The query's parameters, each decoded (`+` is a space, then percent-decoding): a parameter
    /// outside `allowed`, one given twice, or one that does not decode is a validation problem
    /// naming it, so a misspelt filter is never silently ignored.
    static func strictQuery(_ query: Substring?, allowed: Set<String>) throws -> [String: String] {
        var parameters: [String: String] = [:]
        guard let query, !query.isEmpty else { return parameters }
        for pair in query.split(separator: "&", omittingEmptySubsequences: false) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0])
            guard allowed.contains(name) else {
                let known = allowed.sorted().joined(separator: ", ")
                let shown = name.utf8.count <= 32 && name.utf8.allSatisfy { (0x21...0x7E).contains($0) } ? name : "?"
                throw APIProblem.validation("unknown query parameter '\(shown)'; the parameters are \(known)")
            }
            guard parameters[name] == nil else { throw APIProblem.validation("\(name) is given more than once") }
            guard parts.count == 2, let value = PercentEncoding.decoded(parts[1], plusIsSpace: true) else {
                throw APIProblem.validation("\(name) needs a percent-encoded value")
            }
            parameters[name] = value
        }
        return parameters
    }
}
