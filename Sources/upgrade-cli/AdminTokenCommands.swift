import Foundation
import UpgradeEngine

/// `--file PATH`, or `UPGRADE_ADMIN_TOKENS_FILE`: the file `serve` reads its admin tokens from.
enum AdminTokensFileOption {
    static func path(_ arguments: inout ArgumentReader) throws -> String {
        if let path = try arguments.option("--file") {
            guard !path.isEmpty else { throw UsageError("--file must name a file") }
            return path
        }
        guard let path = ProcessInfo.processInfo.environment[AdminTokenFile.environmentVariable], !path.isEmpty else {
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
    static let usage = "upgrade-cli admin tokens add NAME --scopes tickets,accounts,audit,provisioning [--file PATH]"

    static func run(_ arguments: inout ArgumentReader) throws -> Int32 {
        let file = try AdminTokensFileOption.path(&arguments)
        let scopesText = try arguments.requiredOption("--scopes")
        let name = try arguments.positional("NAME")
        try arguments.finish()
        let token: String
        do {
            let scopes = try AdminScope.parseList(scopesText)
            token = try AdminTokenFile.add(name: name, scopes: scopes, path: file, now: Clock.nowSeconds)
        } catch {
            throw AdminTokensFileOption.failure(error)
        }
        // The token alone on stdout, so a script can capture it; the advice on stderr.
        Console.out(token)
        Console.err(
            "admin token '\(name)' added to \(file); it is shown only now. A running serve reads the file at start-up: restart it."
        )
        return ExitCode.success
    }
}

struct AdminTokensListCommand: CLICommand {
    static let path = ["admin", "tokens", "list"]
    static let summary = "list the admin tokens: name, scopes, created (never a token or hash)"
    static let usage = "upgrade-cli admin tokens list [--file PATH]"

    static func run(_ arguments: inout ArgumentReader) throws -> Int32 {
        let file = try AdminTokensFileOption.path(&arguments)
        try arguments.finish()
        let tokens: AdminTokenSet
        do {
            tokens = try AdminTokenFile.load(path: file)
        } catch {
            throw AdminTokensFileOption.failure(error)
        }
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        for token in tokens.tokens {
            let created = formatter.string(from: Date(timeIntervalSince1970: TimeInterval(token.createdAt)))
            Console.out("\(token.name)\t\(token.scopes.map(\.rawValue).joined(separator: ","))\t\(created)")
        }
        if tokens.tokens.isEmpty { Console.err("no admin tokens in \(file)") }
        return ExitCode.success
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
        Console.err("admin token '\(name)' removed from \(file); a running serve keeps it until restarted")
        return ExitCode.success
    }
}
