import AppleEmulator
import Foundation
import Synchronization
import UpgradeAPI
import UpgradeEngine

#if canImport(Glibc)
import Glibc
#endif

/// `serve`: validates the configuration (printing every problem, one line each), then runs the REST
/// API until SIGTERM or SIGINT, finishing in-flight requests before exiting. SIGHUP reloads the
/// configuration files (`UpgradeApplication.reload()`) without stopping.
struct ServeCommand: CLICommand {
    static let path = ["serve"]
    static let summary = "run the REST API (--dev: embedded defaults, in-process Apple emulator, demo account)"
    static let usage =
        "upgrade-cli serve [--dev [--emulator-port PORT]] [--db URL] [--listen ADDR:PORT] [--apple-base-url URL] [--client-ids A,B] [--team-id ID] [--key-id ID | --key-id-file FILE] [--private-key-file P8] [--secret-key-file FILE] [--client-throttle N/SECONDS|off] [--admin-throttle N/SECONDS|off] [--trusted-proxies CIDR,...] [--max-connections-per-client N] [--health-listen ADDR:PORT] [--console-listen ADDR:PORT] [--conversion-timeout SECONDS] [--admin-tokens-file FILE] [--password-rules RULES | --password-rules-file FILE] [--failure-floor-ms MS] [--webhook-url URL --webhook-secret-file FILE] [--legacy-verify-url URL --legacy-verify-secret-file FILE] [--legacy-verify-timeout SECONDS] [--legacy-verify-outage-pause SECONDS] [--legacy-create on|off] [--apple-link-check-seconds SECONDS|off] [--apple-link-check-rate PER_SECOND] [--max-queue-delay-ms MS]"

    static func run(_ arguments: inout ArgumentReader) throws -> Int32 {
        // Watched from the start: until then SIGHUP would end the process, and reading the
        // configuration and assembling the server (a database connect, the start-up checks) can
        // take seconds. A signal that comes before the server exists reloads once it does.
        let reloads = PendingReload()
        do {
            try ReloadSignal.watch(SIGHUP) { reloads.signalled() }
        } catch {
            throw CommandFailure("cannot watch SIGHUP: \(error)", exitCode: ExitCode.failure)
        }
        let development = arguments.flag("--dev")
        let values = try ServeOptions.read(&arguments)
        try arguments.finish()
        let settings: ServerSettings
        do {
            settings = try ServerSettings.load(values, development: development)
        } catch {
            throw ServeOptions.configuration(error)
        }
        // Request logs are written in batches (see LogBuffer), flushed below before exiting.
        let logs = LogBuffer()
        defer { logs.flush() }
        let application = try ServeOptions.assemble(settings, log: RequestLog(write: logs.write))
        reloads.ready(application)
        do {
            try application.start()
        } catch {
            throw CommandFailure(error.description, exitCode: ExitCode.usage)
        }
        if development {
            Console.err(DevelopmentEnvironment.banner)
            Console.err(
                "demo account: \(DevelopmentEnvironment.demoUsername) / \(DevelopmentEnvironment.demoPassword), TOTP seed \(DevelopmentEnvironment.demoTOTPSecretBase32) (oathtool --totp --base32 ...)"
            )
        }
        Console.err("listening on http://\(settings.host):\(application.server.port) (database \(settings.database))")
        if let health = application.healthServer, let listen = settings.healthListen {
            Console.err(
                "health checks on http://\(listen.host):\(health.port)/healthz and /readyz, metrics on /metrics"
            )
        }
        if let console = application.consoleServer, let listen = settings.consoleListen {
            Console.err("support console on http://\(listen.host):\(console.port)/")
        }
        application.server.wait()
        application.stop()
        logs.flush()
        Console.err("stopped")
        return ExitCode.success
    }
}

/// Flags and environment folded into one map of variable names, flags winning.
enum ServeOptions {
    static func read(_ arguments: inout ArgumentReader) throws -> [String: String] {
        // The unavailable ones too, so that `load` refuses them.
        let names = ServerSettings.variables.map(\.variable) + ServerSettings.unavailableVariables.map(\.variable)
        var values = ProcessInfo.processInfo.environment.filter { key, _ in names.contains(key) }
        for (variable, flag) in ServerSettings.variables {
            if let value = try arguments.option(flag) { values[variable] = value }
        }
        return values
    }

    /// Every problem on its own line, exit 2, and no usage text: each names the variable (or its
    /// flag's variable) and the fix, and the command line itself was fine.
    static func configuration(_ error: ServerSettingsError) -> CommandFailure {
        CommandFailure(error.problems.joined(separator: "\nerror: "), exitCode: ExitCode.usage)
    }

    static func assemble(
        _ settings: ServerSettings,
        log: RequestLog = RequestLog(),
        shutdownSignals: [Int32] = [SIGTERM, SIGINT]
    ) throws -> UpgradeApplication {
        do {
            return try UpgradeApplication(
                settings: settings,
                development: DevelopmentEmulator.self,
                log: log,
                configureServer: { $0.shutdownSignals = shutdownSignals }
            )
        } catch let error as ServerSettingsError {
            throw configuration(error)
        } catch let error as StorageError {
            throw CommandFailure.configuration("UPGRADE_DB: \(error.message)")
        }
    }
}

/// The reloads `serve` owes: a `SIGHUP` that arrives before the application exists is kept and
/// run once `ready` hands it over; later ones reload at once.
final class PendingReload: Sendable {
    private struct State {
        var application: UpgradeApplication?
        var pending = false
    }

    private let state = Mutex(State())

    func signalled() {
        let application = state.withLock { state in
            if state.application == nil { state.pending = true }
            return state.application
        }
        application?.reload()
    }

    func ready(_ application: UpgradeApplication) {
        let pending = state.withLock { state in
            state.application = application
            defer { state.pending = false }
            return state.pending
        }
        if pending { application.reload() }
    }
}
