import Foundation
import UpgradeAPI
import UpgradeEngine

/// `--file PATH`, or `UPGRADE_ADMIN_TOKENS_FILE`: the file `serve` reads its admin tokens from.
enum AdminTokensFileOption {
    static func path(_ arguments: inout ArgumentReader) throws -> String {
        if let path = try arguments.option("--file") {
            guard !path.isEmpty else { throw UsageError("--file must name a file") }
            return path
        }
        guard
            let path = ServerSettings.setting(
                AdminTokenFile.environmentVariable,
                in: ProcessInfo.processInfo.environment
            )
        else {
            throw UsageError("missing --file (or \(AdminTokenFile.environmentVariable))")
        }
        return path
    }

    /// Every refusal is one line and exit 2: a bad name, scope or file is a usage or configuration error.
    static func failure(_ error: AdminTokenError) -> CommandFailure {
        CommandFailure.configuration(error.message)
    }
}

struct AdminTokensAddCommand: CLICommand {
    static let path = ["admin", "tokens", "add"]
    static let summary = "create an admin bearer token; printed once, stored hashed (file created mode 0600)"
    static let usage =
        "upgrade-cli admin tokens add NAME --scopes tickets,accounts,audit,provisioning [--expires-in DURATION | --expires-at TIME] [--file PATH]"

    static func run(_ arguments: inout ArgumentReader) throws -> Int32 {
        let file = try AdminTokensFileOption.path(&arguments)
        let scopesText = try arguments.requiredOption("--scopes")
        let expiresIn = try arguments.option("--expires-in")
        let expiresAtText = try arguments.option("--expires-at")
        let name = try arguments.positional("NAME")
        try arguments.finish()
        let now = Clock.nowSeconds
        var expiresAt: Int64?
        switch (expiresIn, expiresAtText) {
        case (nil, nil): break
        case (.some(let text), nil):
            guard let seconds = Self.duration(text) else {
                throw UsageError("--expires-in: expected a duration such as 90d, 12h, 30m or 3600s, not '\(text)'")
            }
            expiresAt = now + seconds
        case (nil, .some(let text)):
            guard let time = Self.time(text) else {
                throw UsageError("--expires-at: expected an RFC 3339 time such as 2027-01-31T00:00:00Z, not '\(text)'")
            }
            expiresAt = time
        case (.some, .some): throw UsageError("give --expires-in or --expires-at, not both")
        }
        let token: String
        do {
            let scopes = try AdminScope.parseList(scopesText)
            token = try AdminTokenFile.add(name: name, scopes: scopes, path: file, now: now, expiresAt: expiresAt)
        } catch {
            throw AdminTokensFileOption.failure(error)
        }
        // The token alone on stdout, so a script can capture it; the advice on stderr.
        Console.out(token)
        let expiry = expiresAt.map { ", expiring \(AdminTokensListCommand.format($0))" } ?? ""
        Console.err(
            "admin token '\(name)' added to \(file)\(expiry); it is shown only now. A running serve takes it on SIGHUP."
        )
        return ExitCode.success
    }

    /// `90d`, `12h`, `30m`, `45s` or bare seconds; more than zero, at most ten years.
    static func duration(_ text: String) -> Int64? {
        let units: [Character: Int64] = ["d": 86_400, "h": 3600, "m": 60, "s": 1]
        var digits = Substring(text)
        var unit: Int64 = 1
        if let last = text.last, let factor = units[last] {
            digits = text.dropLast()
            unit = factor
        }
        guard !digits.isEmpty, digits.utf8.allSatisfy({ (48...57).contains($0) }), let count = Int64(digits),
            count > 0, count <= 3650 * 86_400 / unit
        else { return nil }
        return count * unit
    }

    /// An RFC 3339 time (`2027-01-31T00:00:00Z`, an offset allowed).
    static func time(_ text: String) -> Int64? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text).map { Int64($0.timeIntervalSince1970) }
    }
}

struct AdminTokensListCommand: CLICommand {
    static let path = ["admin", "tokens", "list"]
    static let summary = "list the admin tokens: name, scopes, created, expires, last used (never a token or hash)"
    static let usage = "upgrade-cli admin tokens list [--file PATH] [--db URL]"

    static func run(_ arguments: inout ArgumentReader) throws -> Int32 {
        let file = try AdminTokensFileOption.path(&arguments)
        // Last uses live in the database: only with --db or UPGRADE_DB, never a default file.
        let flag = try arguments.option("--db")
        let variable = StoreOption.variable
        try arguments.finish()
        var location: DatabaseLocation?
        if let text = flag ?? variable {
            do {
                location = try DatabaseLocation.parse(text)
            } catch {
                if flag != nil { throw UsageError("--db: \(error.message)") }
                throw CommandFailure.configuration("UPGRADE_DB: \(error.message)")
            }
        }
        let tokens: AdminTokenSet
        do {
            tokens = try AdminTokenFile.load(path: file)
        } catch {
            throw AdminTokensFileOption.failure(error)
        }
        var lastUses: [String: Int64] = [:]
        if let location {
            let store = try StoreOption.openMigrated(location)
            do {
                for use in try AdminTokenUsage.lastUses(store: store) {
                    lastUses["\(use.name)@\(use.createdAt)"] = use.lastUsedAt
                }
            } catch {
                throw CommandFailure.configuration(error.message)
            }
        }
        let now = Clock.nowSeconds
        for token in tokens.tokens {
            var expires = "never"
            if let expiresAt = token.expiresAt {
                expires = format(expiresAt) + (token.isExpired(at: now) ? " (expired)" : "")
            }
            var lastUsed = "unknown"
            if location != nil { lastUsed = lastUses["\(token.name)@\(token.createdAt)"].map(format) ?? "never" }
            Console.out(
                "\(token.name)\t\(token.scopes.map(\.rawValue).joined(separator: ","))\t\(format(token.createdAt))\t\(expires)\t\(lastUsed)"
            )
        }
        if tokens.tokens.isEmpty { Console.err("no admin tokens in \(file)") }
        if location == nil, !tokens.tokens.isEmpty {
            Console.err("last used is unknown without a database: give --db or set UPGRADE_DB")
        }
        return ExitCode.success
    }

    /// Unix seconds as RFC 3339 UTC.
    static func format(_ seconds: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }
}

struct AdminTokensRemoveCommand: CLICommand {
    static let path = ["admin", "tokens", "remove"]
    static let summary = "remove an admin token by name"
    static let usage = "upgrade-cli admin tokens remove NAME [--file PATH]"

    static func run(_ arguments: inout ArgumentReader) throws -> Int32 {
        let file = try AdminTokensFileOption.path(&arguments)
        let name = try arguments.positional("NAME")
        try arguments.finish()
        do {
            try AdminTokenFile.remove(name: name, path: file)
        } catch {
            throw AdminTokensFileOption.failure(error)
        }
        Console.err("admin token '\(name)' removed from \(file); a running serve refuses it after SIGHUP")
        return ExitCode.success
    }
}
