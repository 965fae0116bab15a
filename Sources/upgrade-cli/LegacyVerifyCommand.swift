import Foundation
import Glibc
import UpgradeAPI
import UpgradeEngine

/// `legacy verify`: a stand-in for a team's legacy login system. It answers the server's signed
/// `password.verify` requests (docs/legacy-verification.md) from an accounts file, so the flow can be
/// tried before the real system has a receiver. Runs until SIGINT or SIGTERM.
struct LegacyVerifyCommand: CLICommand {
    static let path = ["legacy", "verify"]
    static let summary = "play a legacy login system: answer signed password.verify requests from a file"
    static let usage = """
        upgrade-cli legacy verify --accounts FILE --secret-file FILE [--listen HOST:PORT] [--stall SECONDS] \
        [--allow-non-loopback]
          --accounts            JSONL, or a JSON array, of {"username", "passwordHash", "email"?, "displayName"?};
                                passwordHash in any format 'password verify' reads (bcrypt, argon2, phpass, ...)
          --secret-file         the whsec_ secrets the server signs with, one a line (its UPGRADE_LEGACY_VERIFY_SECRET_FILE, mode 0600); any verifies
          --listen              numeric address and port (default 127.0.0.1:8091; port 0 picks a free one)
          --stall               hold every answer this many seconds (0 to 60), to try the server's timeout
          --allow-non-loopback  allow a --listen address that is not loopback
        prints UPGRADE_LEGACY_VERIFY_URL=..., then answers until SIGINT/SIGTERM and exits 0; one line per
        request on standard error (never the password)
        """

    static func run(_ arguments: inout ArgumentReader) throws -> Int32 {
        let accountsPath = try arguments.requiredOption("--accounts")
        let secretPath = try arguments.requiredOption("--secret-file")
        let listen = try arguments.option("--listen") ?? "127.0.0.1:8091"
        let stallText = try arguments.option("--stall")
        let allowNonLoopback = arguments.flag("--allow-non-loopback")
        try arguments.finish()

        let (host, port) = try listenAddress(listen)
        guard ["127.0.0.1", "::1"].contains(host) || allowNonLoopback else {
            throw UsageError(
                "--listen \(listen) is not loopback; anyone who reaches it can test passwords against the accounts. "
                    + "Add --allow-non-loopback if that is really meant"
            )
        }
        var stall = Duration.zero
        if let stallText {
            guard let seconds = Double(stallText), (0...60).contains(seconds) else {
                throw UsageError("--stall must be a number of seconds from 0 to 60, not '\(stallText)'")
            }
            stall = .milliseconds(Int64(seconds * 1000))
        }
        let secret: WebhookSecrets
        do {
            secret = try WebhookSecrets.load(path: secretPath, variable: "--secret-file")
        } catch {
            throw CommandFailure.configuration(error.message)
        }
        let verifier = PasswordVerifier()
        let accounts = try LegacyAccounts(path: accountsPath, verifier: verifier)

        var configuration = HTTPServer.Configuration()
        configuration.host = host
        configuration.port = port
        configuration.shutdownSignals = [SIGINT, SIGTERM]
        configuration.shutdownTimeout = .seconds(5)
        // Its one client is the server under trial, whose stalled questions may well exceed the
        // per-client share meant for the public.
        configuration.maxConnectionsPerClient = configuration.maxConnections
        let handler = LegacyVerifyHandler(
            accounts: accounts,
            secret: secret,
            verifier: verifier,
            stall: stall,
            log: { Console.err("legacy verify: \($0)") }
        )
        let server = HTTPServer(configuration: configuration, handler: handler)
        do {
            try server.start()
        } catch {
            throw CommandFailure("cannot listen on \(listen): \(error)")
        }
        let authority = host.contains(":") ? "[\(host)]:\(server.port)" : "\(host):\(server.port)"
        Console.out("legacy login system: \(accounts.count) account(s) from \(accountsPath); answers POST on any path")
        Console.out("UPGRADE_LEGACY_VERIFY_URL=http://\(authority)/verify")
        Console.out("UPGRADE_LEGACY_VERIFY_SECRET_FILE=\(secretPath)")
        Console.out("stop with Ctrl-C (SIGINT) or SIGTERM")
        server.wait()
        Console.err("legacy verify: stopped")
        return ExitCode.success
    }

    /// `HOST:PORT` or `[IPV6]:PORT`, `localhost` read as 127.0.0.1.
    private static func listenAddress(_ text: String) throws -> (host: String, port: Int) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
            (0...65535).contains(port)
        else {
            throw UsageError("--listen must be HOST:PORT with a port from 0 to 65535, not '\(text)'")
        }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return (host == "localhost" ? "127.0.0.1" : host, port)
    }
}
