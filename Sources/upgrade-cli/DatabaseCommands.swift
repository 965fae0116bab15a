import Foundation
import UpgradeAPI
import UpgradeEngine

/// Opens the store named by `--db` or `UPGRADE_DB` (default `sqlite:upgrade.db`; with `--dev`,
/// `sqlite:siwa-dev.db`, the database `serve --dev` uses).
enum StoreOption {
    /// `UPGRADE_DB` as `serve` reads it: surrounding blanks dropped, blank is unset.
    static var variable: String? { ServerSettings.setting("UPGRADE_DB", in: ProcessInfo.processInfo.environment) }

    /// Reads the location without touching the database: commands call `open` only after every
    /// argument is validated, so bad input never creates a database file. A bad `--db` is a usage
    /// error; a bad `UPGRADE_DB` is a configuration problem: one line naming it, no usage text.
    /// `dev`: the command was given `--dev`, so its default is `serve --dev`'s database, the one its
    /// development key belongs with.
    static func location(_ arguments: inout ArgumentReader, dev: Bool = false) throws -> DatabaseLocation {
        let flag = try arguments.option("--db")
        guard let text = flag ?? variable else { return dev ? .development : .default }
        do {
            return try DatabaseLocation.parse(text)
        } catch {
            if flag != nil { throw UsageError("--db: \(error.message)") }
            throw CommandFailure.configuration("UPGRADE_DB: \(error.message)")
        }
    }

    /// How long a batch job's transactions wait for an unreachable PostgreSQL server, e.g. while
    /// a standby is promoted (README, Operations), before the job stops and says how to resume.
    static let batchOutageWaitSeconds: Double = 60

    /// `batch`: the store of a batch job, whose transactions wait out an outage of up to
    /// `batchOutageWaitSeconds`; other commands fail at once.
    /// An SQLite file that does not exist is created only with `create` (`db migrate`, scratch
    /// databases): anywhere else a mistyped path is one line and exit 2, and no stray file is left.
    static func open(
        _ location: DatabaseLocation,
        batch: Bool = false,
        create: Bool = false
    ) throws
        -> any UpgradeStore
    {
        if !create, location.isMissingFile {
            throw CommandFailure.configuration(
                "no database at \(location) (from --db, UPGRADE_DB or the default); "
                    + "'upgrade-cli db migrate --db \(location)' creates it"
            )
        }
        do {
            return try location.open(outageWaitSeconds: batch ? batchOutageWaitSeconds : 0)
        } catch {
            throw CommandFailure.configuration(error.message)
        }
    }

    /// Opens the store and refuses to go on if migrations are pending, naming the fix.
    static func openMigrated(_ location: DatabaseLocation, batch: Bool = false) throws -> any UpgradeStore {
        let store = try open(location, batch: batch)
        let pending = try store.migrationStatus().filter { $0.appliedAt == nil }
        guard pending.isEmpty else {
            throw CommandFailure.configuration(
                "the database has \(pending.count) pending migration(s); run 'upgrade-cli db migrate' first"
            )
        }
        return store
    }
}

enum Clock {
    static var nowSeconds: Int64 { Int64(Date().timeIntervalSince1970) }
}

struct DatabaseMigrateCommand: CLICommand {
    static let path = ["db", "migrate"]
    static let summary = "apply pending schema migrations"
    static let usage = "upgrade-cli db migrate [--dev] [--db URL]"

    static func run(_ arguments: inout ArgumentReader) throws -> Int32 {
        // --dev: serve --dev's database, as for every other command.
        let dev = arguments.flag("--dev")
        let location = try StoreOption.location(&arguments, dev: dev)
        try arguments.finish()
        let store = try StoreOption.open(location, create: true)
        let applied = try store.migrate(now: Clock.nowSeconds)
        for migration in applied {
            Console.out("applied \(String(format: "%04d", migration.version)) \(migration.name)")
        }
        let total = try store.migrationStatus().count
        Console.out(
            applied.isEmpty
                ? "schema is up to date (\(total) migrations)"
                : "schema is up to date (\(total) migrations, \(applied.count) applied now)"
        )
        // Migration 7 re-keyed what it could; what it must leave to an operator is said here too.
        let usernames = try store.read { tx in try UsernameCheck.run(tx) }
        if !usernames.collisions.isEmpty || !usernames.refusals.isEmpty || !usernames.lookAlikes.isEmpty {
            Console.out(
                "note: \(usernames.collisions.count) username collision group(s), \(usernames.lookAlikes.count) look-alike group(s) and \(usernames.refusals.count) refused username(s) need an operator; run 'upgrade-cli db check'"
            )
        }
        return ExitCode.success
    }
}

struct DatabaseCheckCommand: CLICommand {
    static let path = ["db", "check"]
    static let summary =
        "list stored usernames that collide, look alike, are refused or would change under the username rule, and password hashes over the cost limits"
    static let usage = "upgrade-cli db check [--dev] [--db URL]"

    static func run(_ arguments: inout ArgumentReader) throws -> Int32 {
        let dev = arguments.flag("--dev")
        let location = try StoreOption.location(&arguments, dev: dev)
        try arguments.finish()
        let store = try StoreOption.open(location)
        // Read-only, and useful before `db migrate` too: it shows what migration 7 would re-key.
        guard try store.migrationStatus().first?.appliedAt != nil else {
            throw CommandFailure.configuration("the database has no schema yet; run 'upgrade-cli db migrate' first")
        }
        // Look-alikes need the skeletons migration 18 computes (and `db migrate` recomputes when
        // ICU changes); before that they are not compared, and the check cannot pass.
        let hasSkeletons = try store.migrationStatus().contains {
            $0.version == UsernameSkeletons.migrationVersion && $0.appliedAt != nil
        }
        let check = try store.read { tx in try UsernameCheck.run(tx, lookAlikes: hasSkeletons) }
        func name(_ username: String) -> String { UsernameCheck.escaped(username) }
        for collision in check.collisions {
            Console.out("collision: \(collision.accounts.count) accounts are all '\(name(collision.username))':")
            for account in collision.accounts {
                Console.out("  account \(account.id) stored as '\(name(account.username))'")
            }
        }
        for group in check.lookAlikes {
            Console.out(
                "look-alike: \(group.accounts.count) accounts have the confusable skeleton '\(name(group.skeleton))':"
            )
            for account in group.accounts {
                Console.out("  account \(account.id) stored as '\(name(account.username))'")
            }
        }
        if !check.lookAlikesChecked {
            Console.out(
                "look-alikes: not compared: the stored username skeletons are missing or another ICU release's; run 'upgrade-cli db migrate'"
            )
        }
        for refusal in check.refusals {
            Console.out(
                "refused: account \(refusal.account.id) stored as '\(name(refusal.account.username))': \(refusal.reason)"
            )
        }
        for change in check.changes {
            Console.out(
                "change: account \(change.account.id) stored as '\(name(change.account.username))' becomes '\(name(change.username))' (applied by 'upgrade-cli db migrate')"
            )
        }
        // Hashes stored before the cost limits were lowered can no longer be checked at sign-in.
        // With the secret key, hashes that name a parameter set (Firebase scrypt, keyed HMAC) are
        // checked against the stored sets too: one missing or not opening is listed.
        var verifier = PasswordVerifier()
        if let secrets = try SecretKeyOption.loadIfConfigured(dev: dev) {
            let records = (try? store.read { tx in try tx.hashParameterSets() }) ?? []
            verifier.parameterSets = HashParameterSets(records: records, secrets: secrets)
        }
        let hashes = try store.read { tx in try StoredHashCheck.run(tx, verifier: verifier) }
        for unusable in hashes.unusable {
            Console.out(
                "hash: account \(unusable.account.id) stored as '\(name(unusable.account.username))' cannot sign in with its password: \(unusable.reason)"
            )
        }
        if !hashes.isClean {
            Console.out(
                "\(hashes.unusable.count) of \(hashes.hashes) stored password hash(es) cannot be checked (over the cost limits, not a supported hash, or naming a parameter set that is not stored or does not open with the key): give those accounts a new password (a ticket and POST /v1/password-changes) or re-import them rehashed"
            )
        }
        Console.out(
            "\(check.accounts) account(s) checked against PRECIS UsernameCaseMapped (RFC 8265) and UTS #39: \(check.collisions.count) collision group(s), \(check.lookAlikes.count) look-alike group(s), \(check.refusals.count) refused, \(check.changes.count) to re-key"
        )
        return check.isClean && hashes.isClean ? ExitCode.success : ExitCode.failure
    }
}

struct DatabaseStatusCommand: CLICommand {
    static let path = ["db", "status"]
    static let summary = "list schema migrations and whether each is applied"
    static let usage = "upgrade-cli db status [--db URL]"

    static func run(_ arguments: inout ArgumentReader) throws -> Int32 {
        let location = try StoreOption.location(&arguments)
        try arguments.finish()
        let store = try StoreOption.open(location)
        let formatter = ISO8601DateFormatter()
        for migration in try store.migrationStatus() {
            let when =
                migration.appliedAt.map {
                    "applied \(formatter.string(from: Date(timeIntervalSince1970: TimeInterval($0))))"
                } ?? "pending"
            Console.out(
                "\(String(format: "%04d", migration.version)) \(migration.name.padding(toLength: 24, withPad: " ", startingAt: 0)) \(when)"
            )
        }
        return ExitCode.success
    }
}
