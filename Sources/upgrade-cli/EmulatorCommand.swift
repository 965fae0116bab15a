import AppleEmulator
import Foundation
import Glibc
import UpgradeAPI
import UpgradeEngine

/// `emulator serve`: the Apple ID emulator on its own port, so a server (or curl) can talk to
/// "Apple" over real HTTP. Optionally sets up a team, its key and apps, and writes the key as a
/// `.p8` file the server can use as `APPLE_PRIVATE_KEY_FILE`. Runs until SIGINT or SIGTERM.
struct EmulatorServeCommand: CLICommand {
    static let path = ["emulator", "serve"]
    static let summary = "run the Apple ID emulator (Apple's /auth endpoints and /emulator setup) until Ctrl-C"
    static let usage = """
        upgrade-cli emulator serve [--port N] [--host ADDRESS] [--team TEAM_ID --client-id ID [--client-id ID ...] \
        [--services-id ID] [--key-id KEY_ID] [--private-key-out FILE | --private-key FILE] [--user EMAIL ...]] \
        [--notify-url URL] [--allow-remote-notify] [--keys-max-age SECONDS] [--allow-non-loopback-host]
          --port              port to listen on (default 8090; 0 picks a free one)
          --host              numeric address to listen on (default 127.0.0.1); a non-loopback address also
                              needs --allow-non-loopback-host, since anyone reaching it can mint tokens
          --team              create this team (10 characters A-Z 0-9) with a Sign in with Apple key
          --client-id         an app (bundle id) of the team; repeat or separate with commas
          --services-id       a Services ID grouped with the first --client-id (web sign-in)
          --key-id            the key's id (default: random, 10 characters)
          --private-key-out   write the new key as a .p8 file (mode 0600; never overwrites) for APPLE_PRIVATE_KEY_FILE
          --private-key       use this existing .p8 file instead of a new key
          --user              create an Apple Account with this email (printed with its user id); repeatable
          --notify-url        deliver server-to-server notifications here as soon as they are queued
          --allow-remote-notify  allow notification URLs that are not loopback
          --keys-max-age      send Cache-Control: max-age on /auth/keys
        prints the base URL and the server settings, then serves until SIGINT/SIGTERM and exits 0
        """

    static func run(_ arguments: inout ArgumentReader) throws -> Int32 {
        let port = try arguments.intOption("--port") ?? 8090
        let host = try arguments.option("--host") ?? "127.0.0.1"
        let allowNonLoopbackHost = arguments.flag("--allow-non-loopback-host")
        let team = try arguments.option("--team")
        let clientIDs = try arguments.repeatedOption("--client-id")
            .flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
        let servicesID = try arguments.option("--services-id")
        let keyID = try arguments.option("--key-id") ?? randomKeyID()
        let privateKeyOut = try arguments.option("--private-key-out")
        let privateKeyIn = try arguments.option("--private-key")
        let users = try arguments.repeatedOption("--user")
        let notifyURL = try arguments.option("--notify-url")
        let allowRemoteNotify = arguments.flag("--allow-remote-notify")
        let keysMaxAge = try arguments.intOption("--keys-max-age")
        try arguments.finish()

        guard (0...65535).contains(port) else { throw UsageError("--port must be 0 to 65535, not \(port)") }
        let listenHost = host == "localhost" ? "127.0.0.1" : host
        guard ["127.0.0.1", "::1"].contains(listenHost) || allowNonLoopbackHost else {
            throw UsageError(
                "--host \(host) is not loopback; anyone who reaches the emulator can mint tokens for its apps. "
                    + "Add --allow-non-loopback-host if that is really meant"
            )
        }
        if team == nil,
            !clientIDs.isEmpty || servicesID != nil || privateKeyOut != nil || privateKeyIn != nil || !users.isEmpty
        {
            throw UsageError("--client-id, --services-id, --private-key(-out) and --user need --team")
        }
        if team != nil, clientIDs.isEmpty { throw UsageError("--team needs at least one --client-id") }
        if privateKeyOut != nil, privateKeyIn != nil {
            throw UsageError("give either --private-key-out (a new key) or --private-key (an existing one)")
        }
        if let maxAge = keysMaxAge, !(0...86_400).contains(maxAge) {
            throw UsageError("--keys-max-age must be 0 to 86400 seconds")
        }
        if let notifyURL,
            let problem = AppleIDEmulatorHandler.notificationURLProblem(notifyURL, allowNonLoopback: allowRemoteNotify)
        {
            throw UsageError("--notify-url: \(problem)")
        }

        let clock = EmulatorClock()
        let emulator = AppleIDEmulator(clock: { clock.now })
        var setup: [String] = []
        if let team {
            setup = try bootstrap(
                emulator,
                team: team,
                keyID: keyID,
                clientIDs: clientIDs,
                servicesID: servicesID,
                privateKeyOut: privateKeyOut,
                privateKeyIn: privateKeyIn,
                users: users
            )
        }

        var handlerConfiguration = AppleIDEmulatorHandler.Configuration()
        handlerConfiguration.keysMaxAge = keysMaxAge
        handlerConfiguration.notificationURL = notifyURL
        handlerConfiguration.allowNonLoopbackNotificationURLs = allowRemoteNotify
        handlerConfiguration.clock = clock
        handlerConfiguration.log = { Console.err("emulator: \($0)") }
        var serverConfiguration = HTTPServer.Configuration()
        serverConfiguration.host = listenHost
        serverConfiguration.port = port
        serverConfiguration.shutdownSignals = [SIGINT, SIGTERM]
        serverConfiguration.shutdownTimeout = .seconds(5)
        let server = HTTPServer(
            configuration: serverConfiguration,
            handler: AppleIDEmulatorHandler(emulator: emulator, configuration: handlerConfiguration)
        )
        do {
            try server.start()
        } catch {
            throw CommandFailure("cannot serve on \(host):\(port): \(error)")
        }
        let baseURL =
            listenHost.contains(":") ? "http://[\(listenHost)]:\(server.port)" : "http://\(listenHost):\(server.port)"
        Console.out("Apple ID emulator at \(baseURL)")
        Console.out(
            "  Apple's endpoints:   GET /auth/keys, POST /auth/token, POST /auth/revoke, POST /auth/usermigrationinfo"
        )
        Console.out("  emulator endpoints:  \(baseURL)/emulator/... (JSON; Schema/emulator-openapi.yaml)")
        if team == nil {
            Console.out(
                """
                no team yet; create one, or restart with --team TEAM_ID --client-id BUNDLE_ID --private-key-out key.p8:
                  curl -s -X POST \(baseURL)/emulator/teams -H 'Content-Type: application/json' -d '{"teamId":"TEAMA12345"}'
                  curl -s -X POST \(baseURL)/emulator/teams/TEAMA12345/keys -H 'Content-Type: application/json' -d '{"keyId":"KEYA123456"}'
                  curl -s -X POST \(baseURL)/emulator/apps -H 'Content-Type: application/json' \
                -d '{"clientId":"com.example.app","teamId":"TEAMA12345"}'
                """
            )
        }
        for line in setup { Console.out(line) }
        Console.out("APPLE_BASE_URL=\(baseURL)")
        Console.out("stop with Ctrl-C (SIGINT) or SIGTERM")
        server.wait()
        Console.err("emulator: stopped")
        return ExitCode.success
    }

    /// Creates the team, its key and apps (and users); returns the lines to print.
    private static func bootstrap(
        _ emulator: AppleIDEmulator,
        team: String,
        keyID: String,
        clientIDs: [String],
        servicesID: String?,
        privateKeyOut: String?,
        privateKeyIn: String?,
        users: [String]
    ) throws -> [String] {
        let privateKey: P256PrivateKey
        if let privateKeyIn {
            let pem: String
            do {
                pem = try String(contentsOfFile: privateKeyIn, encoding: .utf8)
            } catch {
                throw UsageError(
                    "cannot read --private-key \(privateKeyIn): \((error as NSError).localizedDescription)"
                )
            }
            do {
                privateKey = try P256PrivateKey(pem: pem)
            } catch {
                throw UsageError("--private-key \(privateKeyIn) is not a P-256 private key (.p8): \(error)")
            }
        } else {
            privateKey = P256PrivateKey()
            if let privateKeyOut { try writeNewFile(privateKeyOut, contents: privateKey.pemRepresentation) }
        }
        do {
            try emulator.addTeam(team)
            try emulator.registerKey(teamID: team, keyID: keyID, publicKey: privateKey.publicKey)
            for clientID in clientIDs { try emulator.addApp(clientID: clientID, teamID: team) }
            if let servicesID { try emulator.addApp(clientID: servicesID, teamID: team, primaryAppID: clientIDs[0]) }
        } catch {
            throw UsageError(error.message)
        }
        var lines: [String] = []
        for email in users {
            do {
                lines.append("user \(email): userId \(try emulator.createUser(email: email))")
            } catch {
                throw UsageError("--user \(email): \(error.message)")
            }
        }
        let keyFile = privateKeyIn ?? privateKeyOut
        lines.append("APPLE_TEAM_ID=\(team)")
        lines.append("APPLE_KEY_ID=\(keyID)")
        lines.append("APPLE_CLIENT_IDS=\((clientIDs + (servicesID.map { [$0] } ?? [])).joined(separator: ","))")
        if let keyFile {
            lines.append("APPLE_PRIVATE_KEY_FILE=\(keyFile)")
        } else {
            lines.append("(the team's private key exists only in memory; pass --private-key-out FILE to save it)")
        }
        return lines
    }

    /// Creates `path` with mode 0600; an existing file is never replaced (it may be a real key).
    private static func writeNewFile(_ path: String, contents: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let reason =
                errno == EEXIST ? "it already exists (use --private-key to reuse it)" : String(cString: strerror(errno))
            throw UsageError("cannot create --private-key-out \(path): \(reason)")
        }
        defer { close(fd) }
        let bytes = Array(contents.utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == bytes.count else {
            throw CommandFailure("cannot write \(path): \(String(cString: strerror(errno)))")
        }
    }

    private static func randomKeyID() -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".utf8)
        return String(decoding: SecureRandom.bytes(10).map { alphabet[Int($0) % alphabet.count] }, as: UTF8.self)
    }
}
