import Foundation
import Glibc
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// `upgrade-cli keys status` and `keys reseal` as processes, on both backends: a rotation from one
/// key to the next, and a reseal killed with SIGKILL several times that still loses nothing.
@Suite("upgrade-cli keys")
struct KeysCLITests {
    static let oldKey = [UInt8](repeating: 0x11, count: 32)
    static let newKey = [UInt8](repeating: 0x22, count: 32)
    static let now: Int64 = 1_760_000_000

    /// A keyring file of `keys` (newest first), mode 0600.
    static func keyring(_ dir: URL, _ name: String, _ keys: [(String, [UInt8])]) throws -> String {
        let url = dir.appendingPathComponent(name)
        let text = keys.map { "\($0.0) \(Data($0.1).base64EncodedString())\n" }.joined()
        try Data(("# test keyring\n" + text).utf8).write(to: url)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: url.path)
        return url.path
    }

    /// Runs `serve --dev` on `database` with `keyring`, expecting it to refuse to start: its exit
    /// status (-1 if it had to be killed) and standard error.
    static func serveRefusal(database: String, keyring: String) throws -> (status: Int32, stderr: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try UpgradeCLI.executable())
        process.arguments = ["serve", "--dev", "--listen", "127.0.0.1:0", "--health-listen", "127.0.0.1:0"]
        process.environment = ["PATH": "/usr/bin:/bin", "UPGRADE_DB": database, "UPGRADE_SECRET_KEY_FILE": keyring]
        let err = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = err
        try process.run()
        // A server that started anyway is stopped rather than left to hang the test.
        let watchdog = DispatchWorkItem { kill(process.processIdentifier, SIGKILL) }
        DispatchQueue.global().asyncAfter(deadline: .now() + 30, execute: watchdog)
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        watchdog.cancel()
        return (process.terminationReason == .exit ? process.terminationStatus : -1, stderr)
    }

    /// What was sealed, to check against after the rotation.
    struct Seeded {
        var totpSecrets: [String: [UInt8]] = [:]
        var refreshTokens: [String: String] = [:]
        var revocationTokens: [String: String] = [:]
    }

    /// `count` accounts with a TOTP secret and a linked Apple account with a refresh token, two
    /// pending revocations, one done, and one hash parameter set, all sealed with `box`; the first
    /// account's secret in format 1 when `box` lists key `0`.
    static func seed(_ store: any UpgradeStore, box: SecretBox, count: Int) throws -> Seeded {
        var seeded = Seeded()
        try store.write { tx in
            for index in 0..<count {
                let id = String(format: "acct-%05d", index)
                try tx.insertAccount(
                    AccountRecord(
                        id: id,
                        username: "user\(index)",
                        credentialKind: .password,
                        createdAt: now,
                        updatedAt: now
                    )
                )
                let secret = SecureRandom.bytes(20)
                seeded.totpSecrets[id] = secret
                let context = UpgradeService.totpContext(accountID: id)
                let sealed =
                    index == 0 && box.keyIDs.contains("0")
                    ? try box.sealVersion1(secret, context: context, nonce: SecureRandom.bytes(12))
                    : box.seal(secret, context: context)
                try tx.upsertTOTPEnrollment(
                    TOTPEnrollmentRecord(
                        accountID: id,
                        secretCiphertext: sealed,
                        algorithm: .sha1,
                        digits: 6,
                        period: 30,
                        lastAcceptedStep: nil,
                        createdAt: now
                    )
                )
                let token = "r.\(index).\(SecureRandom.token(byteCount: 12))"
                seeded.refreshTokens[id] = token
                try tx.insertAppleLink(
                    AppleLinkRecord(
                        accountID: id,
                        sub: "001.\(index)",
                        teamID: "TEAMA12345",
                        clientID: "com.example.app",
                        email: nil,
                        isPrivateEmail: nil,
                        refreshTokenCiphertext: box.seal(
                            Array(token.utf8),
                            context: UpgradeService.refreshTokenContext(accountID: id)
                        ),
                        status: .linked,
                        linkedAt: now,
                        updatedAt: now
                    )
                )
            }
            for (index, accountID) in ["deleted-1", "deleted-2", "deleted-3"].enumerated() {
                let token = "r.deleted.\(index)"
                seeded.revocationTokens["rev-\(index)"] = token
                try tx.insertAppleRevocation(
                    AppleRevocationRecord(
                        id: "rev-\(index)",
                        accountID: accountID,
                        tokenCiphertext: box.seal(
                            Array(token.utf8),
                            context: UpgradeService.refreshTokenContext(accountID: accountID)
                        ),
                        clientID: "com.example.app",
                        createdAt: now,
                        nextAttemptAt: now
                    )
                )
            }
            _ = try tx.finishAppleRevocation(id: "rev-2", now: now, note: nil)
            seeded.revocationTokens["rev-2"] = nil
            try tx.insertHashParameterSet(
                HashParameterSetRecord(
                    id: 1,
                    kind: "hmac",
                    sealed: box.seal(Array("parameters".utf8), context: HashParameterSet.sealingContext(id: 1)),
                    createdAt: now
                )
            )
        }
        return seeded
    }

    /// Every value opens with `box` (the new key alone, so nothing is left under the old one) to
    /// what was sealed, and every TOTP secret gives a code the step-up check accepts.
    static func expectIntact(_ store: any UpgradeStore, _ seeded: Seeded, box: SecretBox) throws {
        let service = UpgradeService(
            store: store,
            passwords: PasswordVerifier(),
            secrets: box,
            identityTokens: IdentityTokenVerifier(
                keys: try JWKSet(keys: [(UpgradeHarness.keyID, UpgradeHarness.appleKey.publicKey)]),
                policy: try IdentityTokenPolicy(allowedAudiences: [UpgradeHarness.clientID])
            ),
            apple: ScriptedAppleEndpoint(),
            configuration: UpgradeServiceConfiguration(policy: .default, appleTeamID: UpgradeHarness.teamID)
        )
        let now = Int64(Date().timeIntervalSince1970)
        let step = UInt64(TOTP.step(at: now, parameters: .standard))
        var accepted = 0
        for (accountID, secret) in seeded.totpSecrets {
            let code = TOTP.code(secret: secret, parameters: .standard, counter: step)
            if try store.write({ try service.checkCode(.totp(code), accountID: accountID, tx: $0, now: now) }) {
                accepted += 1
            }
        }
        #expect(accepted == seeded.totpSecrets.count, "every TOTP secret gives an accepted step-up code")
        let links = try store.read { tx in try seeded.refreshTokens.keys.map { try tx.appleLink(accountID: $0) } }
        var opened = 0
        for link in links {
            guard let link, let sealed = link.refreshTokenCiphertext else { continue }
            let token = try box.open(sealed, context: UpgradeService.refreshTokenContext(accountID: link.accountID))
            if String(decoding: token, as: UTF8.self) == seeded.refreshTokens[link.accountID] { opened += 1 }
        }
        #expect(opened == seeded.refreshTokens.count, "every refresh token opens to what was stored")
        for (id, expected) in seeded.revocationTokens {
            let row = try #require(try store.read { try $0.appleRevocation(id: id) })
            let token = try box.open(
                row.tokenCiphertext,
                context: UpgradeService.refreshTokenContext(accountID: row.accountID)
            )
            #expect(String(decoding: token, as: UTF8.self) == expected)
        }
        let sets = try store.read { try $0.hashParameterSets() }
        #expect(
            try box.open(sets[0].sealed, context: HashParameterSet.sealingContext(id: 1)) == Array("parameters".utf8)
        )
        let counts = try store.read { try $0.sealedValueCounts() }
        #expect(counts.allSatisfy { $0.keyID == box.newestKeyID }, "\(counts)")
    }

    @Test(
        "status counts per key; reseal moves every value to the newest key and says the old one is unused",
        arguments: Backend.all
    )
    func statusAndReseal(_ backend: Backend) throws {
        let dir = try AccountImportCLITests.directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let db = try backend.database(forProcesses: true)
        let url = try #require(db.url)
        // Today's key file: 32 raw bytes, key id 0.
        let rawKey = dir.appendingPathComponent("raw-key")
        try Data(Self.oldKey).write(to: rawKey)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: rawKey.path)
        let seeded = try Self.seed(db.store, box: try SecretKeyFile.load(path: rawKey.path), count: 7)

        let onlyNew = try Self.keyring(dir, "only-new", [("k2", Self.newKey)])
        let missing = try runCLI(["keys", "status", "--db", url, "--secret-key-file", onlyNew])
        #expect(missing.status == 1, "\(missing)")
        #expect(missing.stdout.contains("key 0 (MISSING from the keyring): 17 value(s)"), "\(missing.stdout)")
        #expect(missing.stdout.contains("missing keys (values need them; add them back): 0 (17 value(s))"))

        let rotated = try Self.keyring(dir, "rotated", [("k2", Self.newKey), ("0", Self.oldKey)])
        let environment = ["UPGRADE_DB": url, "UPGRADE_SECRET_KEY_FILE": rotated]
        let before = try runCLI(["keys", "status"], environment: environment)
        #expect(before.status == 0, "\(before)")
        #expect(
            before.stdout.split(separator: "\n").map(String.init) == [
                "keyring (newest first): k2, 0",
                "key k2 (newest): 0 value(s)",
                "key 0: 17 value(s): totp-secret 7, apple-refresh-token 7, apple-revocation-token 2, hash-parameters 1",
                "by kind: totp-secret 7, apple-refresh-token 7, apple-revocation-token 2, hash-parameters 1",
                "unused keys: none",
                "missing keys: none",
                "17 value(s) are not under the newest key; run 'upgrade-cli keys reseal'",
                "serve instances (seen in the last 35 s): none",
            ],
            "\(before.stdout)"
        )

        // One run at a time: a held lease refuses a second.
        let held = try JobLease.acquire(job: "keys reseal", store: db.store, now: Int64(Date().timeIntervalSince1970))
        let refused = try runCLI(["keys", "reseal"], environment: environment)
        #expect(refused.status == 2 && refused.stderr.contains("already running"), "\(refused)")
        held.release()

        let reseal = try runCLI(["keys", "reseal", "--batch", "2"], environment: environment)
        #expect(reseal.status == 0, "\(reseal)")
        #expect(reseal.stdout.contains("totp-secret: 2 of 7 re-sealed"), "\(reseal.stdout)")
        #expect(reseal.stdout.contains("totp-secret: 7 of 7 re-sealed"))
        #expect(reseal.stdout.contains("re-sealed 17 value(s) under key k2"))
        #expect(
            reseal.stdout.contains(
                "every sealed value is under key k2; no longer used, safe to remove from the keyring: 0"
            )
        )
        let after = try runCLI(["keys", "status"], environment: environment)
        #expect(after.status == 0)
        #expect(after.stdout.contains("key k2 (newest): 17 value(s)"), "\(after.stdout)")
        #expect(after.stdout.contains("unused keys (no value needs them; safe to remove): 0"))
        let again = try runCLI(["keys", "reseal"], environment: environment)
        #expect(again.stdout.contains("re-sealed 0 value(s) under key k2"), "\(again.stdout)")

        try Self.expectIntact(db.store, seeded, box: try SecretBox(keys: [("k2", Self.newKey)]))
        let status = try runCLI(["keys", "status", "--secret-key-file", onlyNew], environment: environment)
        #expect(status.status == 0, "with the old key removed: \(status)")
    }

    @Test(
        "keys reseal refuses while a running serve's keyring lacks the new key and runs once it reloaded; keys status lists each instance",
        arguments: Backend.all
    )
    func resealWaitsForRunningInstances(_ backend: Backend) throws {
        let dir = try AccountImportCLITests.directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let db = try backend.database(forProcesses: true)
        let url = try #require(db.url)
        _ = try Self.seed(db.store, box: try SecretBox(keys: [("k1", Self.oldKey)]), count: 3)
        // The instance's own keyring file, still on the old key alone.
        let served = try Self.keyring(dir, "served", [("k1", Self.oldKey)])
        let serve = Process()
        serve.executableURL = URL(fileURLWithPath: try UpgradeCLI.executable())
        serve.arguments = ["serve", "--dev", "--listen", "127.0.0.1:0", "--emulator-port", "0"]
        serve.environment = ["PATH": "/usr/bin:/bin", "UPGRADE_DB": url, "UPGRADE_SECRET_KEY_FILE": served]
        serve.standardOutput = FileHandle.nullDevice
        serve.standardError = FileHandle.nullDevice
        try serve.run()
        let pid = Int64(serve.processIdentifier)
        defer {
            if serve.isRunning { kill(serve.processIdentifier, SIGKILL) }
            serve.waitUntilExit()
        }
        func row() throws -> ServeInstanceRecord? {
            try RunningKeyrings.live(store: db.store, now: Int64(Date().timeIntervalSince1970)).first { $0.pid == pid }
        }
        func eventually(_ condition: () throws -> Bool) throws -> Bool {
            for _ in 0..<400 {
                if try condition() { return true }
                usleep(50_000)
            }
            return try condition()
        }
        try #require(try eventually { try row() != nil }, "serve wrote no instance row")

        let rotated = try Self.keyring(dir, "rotated", [("k2", Self.newKey), ("k1", Self.oldKey)])
        let environment = ["UPGRADE_DB": url, "UPGRADE_SECRET_KEY_FILE": rotated]
        let status = try runCLI(["keys", "status"], environment: environment)
        #expect(status.status == 1, "\(status)")
        #expect(status.stdout.contains("serve instances (seen in the last 35 s): 1\n"), "\(status.stdout)")
        #expect(status.stdout.contains("pid \(pid) on 127.0.0.1:"), "\(status.stdout)")
        #expect(status.stdout.contains("(keyring k1; seen "))
        #expect(
            status.stdout.contains(": CANNOT OPEN key k2; reload it with this keyring (kill -HUP) before keys reseal")
        )
        let refused = try runCLI(["keys", "reseal"], environment: environment)
        #expect(refused.status == 2, "\(refused)")
        #expect(refused.stderr.split(separator: "\n").count == 1, "\(refused.stderr)")
        #expect(refused.stderr.contains("cannot open values sealed under key k2: "), "\(refused.stderr)")
        #expect(refused.stderr.contains("pid \(pid) on 127.0.0.1:") && refused.stderr.contains("kill -HUP"))
        let counts = try db.store.read { try $0.sealedValueCounts() }
        #expect(!counts.contains { $0.keyID == "k2" }, "nothing was moved: \(counts)")
        #expect(try db.store.read { try $0.jobLease(job: "keys reseal") } == nil, "the lease was released")

        // The operator copies the new keyring to the instance and reloads it.
        _ = try Self.keyring(dir, "served", [("k2", Self.newKey), ("k1", Self.oldKey)])
        kill(serve.processIdentifier, SIGHUP)
        let reloaded = try eventually { try row()?.keyIDs == ["k2", "k1"] }
        let after = try row()
        #expect(reloaded, "the reload did not rewrite the row: \(String(describing: after))")
        let listed = try runCLI(["keys", "status"], environment: environment)
        #expect(listed.status == 0, "\(listed)")
        #expect(listed.stdout.contains("(keyring k2, k1; seen "), "\(listed.stdout)")
        #expect(!listed.stdout.contains("CANNOT OPEN"))
        let reseal = try runCLI(["keys", "reseal"], environment: environment)
        #expect(reseal.status == 0, "\(reseal)")
        #expect(reseal.stdout.contains("no longer used, safe to remove from the keyring: k1"), "\(reseal.stdout)")

        // A clean stop deletes the row: the instance is not listed any more.
        kill(serve.processIdentifier, SIGTERM)
        serve.waitUntilExit()
        #expect(try row() == nil)
        let stopped = try runCLI(["keys", "status"], environment: environment)
        #expect(stopped.stdout.contains("(seen in the last 35 s): none"), "\(stopped.stdout)")
    }

    @Test("an instance that appears mid-reseal with an older keyring stops the run before the next batch")
    func resealStopsForAnInstanceStartedMeanwhile() throws {
        let db = try Backend.sqlite.database()
        _ = try Self.seed(db.store, box: try SecretBox(keys: [("k1", Self.oldKey)]), count: 3)
        let rotated = try SecretBox(keys: [("k2", Self.newKey), ("k1", Self.oldKey)])
        let wall = { Int64(Date().timeIntervalSince1970) }
        func lagging() throws -> String? {
            RunningKeyrings.resealProblem(
                keyID: "k2",
                instances: try RunningKeyrings.live(store: db.store, now: wall()),
                now: wall()
            )
        }
        var instance = ServeInstanceRecord(
            id: "late",
            host: "host-b",
            pid: 4242,
            listen: "127.0.0.1:8080",
            keyIDs: ["k1"],
            startedAt: wall(),
            seenAt: wall()
        )
        // After the first batch, an instance starts with the keyring from before the rotation.
        var batches = 0
        let resealer = SealedValueResealer(store: db.store, secrets: rotated, batchSize: 1)
        let stopped = try resealer.run(
            onBatch: { _ in
                batches += 1
                if batches == 1 { try? db.store.write { try $0.recordServeInstance(instance) } }
            },
            blocker: lagging
        )
        #expect(stopped.stopped)
        #expect(stopped.totalResealed == 1)
        let reason = try #require(stopped.blocked)
        #expect(reason.contains("host-b pid 4242 on 127.0.0.1:8080 (keyring k1;"), "\(reason)")
        let counts = try db.store.read { try $0.sealedValueCounts() }
        #expect(counts.filter { $0.keyID == "k2" }.map(\.count).reduce(0, +) == 1, "\(counts)")

        // Reloaded with the new keyring, the instance no longer holds the run back.
        instance.keyIDs = ["k2", "k1"]
        instance.seenAt = wall()
        try db.store.write { try $0.recordServeInstance(instance) }
        let finished = try resealer.run(blocker: lagging)
        #expect(!finished.stopped && finished.blocked == nil)
        let after = try db.store.read { try $0.sealedValueCounts() }
        #expect(!after.contains { $0.keyID == "k1" }, "\(after)")
    }

    @Test("a key file that is missing or too open is one line naming it, exit 2")
    func badKeyFile() throws {
        let dir = try AccountImportCLITests.directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let open = try Self.keyring(dir, "open", [("k1", Self.newKey)])
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: open)
        let database = "sqlite:" + dir.appendingPathComponent("db.sqlite").path
        for (arguments, fragment) in [
            (["keys", "status", "--db", database, "--secret-key-file", open], "chmod 600"),
            (["keys", "reseal", "--db", database], "UPGRADE_SECRET_KEY_FILE is not set"),
        ] {
            let run = try runCLI(arguments)
            #expect(run.status == 2, "\(run)")
            #expect(run.stderr.contains(fragment), "\(run.stderr)")
            #expect(run.stderr.split(separator: "\n").count == 1, "\(run.stderr)")
        }
    }

    @Test(
        "killed with SIGKILL mid-run several times, reruns re-seal every value once and lose none",
        arguments: Backend.all
    )
    func killedAndRerun(_ backend: Backend) throws {
        let dir = try AccountImportCLITests.directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let db = try backend.database(forProcesses: true)
        let seeded = try Self.seed(db.store, box: try SecretBox(keys: [("k1", Self.oldKey)]), count: 150)
        let total: Int64 = 150 * 2 + 2 + 1
        let rotated = try Self.keyring(dir, "rotated", [("k2", Self.newKey), ("k1", Self.oldKey)])
        let environment = [
            "UPGRADE_DB": try #require(db.url), "UPGRADE_SECRET_KEY_FILE": rotated, "UPGRADE_JOB_LEASE_SECONDS": "2",
            "PATH": "/usr/bin:/bin",
        ]
        func underNew() throws -> Int64 {
            try db.store.read { try $0.sealedValueCounts() }.filter { $0.keyID == "k2" }.reduce(0) { $0 + $1.count }
        }
        var previous: Int64 = 0
        for (attempt, batches) in [4, 9, 6].enumerated() {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: try UpgradeCLI.executable())
            process.arguments = ["keys", "reseal", "--batch", "3"]
            process.environment = environment
            let out = Pipe()
            process.standardOutput = out
            process.standardError = FileHandle.nullDevice
            try process.run()
            // Killed once it has reported `batches` committed batches: mid-run, between or inside one.
            var seen = ""
            while seen.components(separatedBy: " re-sealed\n").count - 1 < batches {
                let data = out.fileHandleForReading.availableData
                if data.isEmpty { break }
                seen += String(decoding: data, as: UTF8.self)
            }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            #expect(process.terminationReason == .uncaughtSignal, "attempt \(attempt) was killed before its end")
            let done = try underNew()
            #expect(done > previous && done < total, "attempt \(attempt) committed some batches, not all: \(done)")
            previous = done
            // The killed run's lease lapses two seconds after its last heartbeat.
            sleep(3)
        }
        let final = try runCLI(["keys", "reseal", "--batch", "3"], environment: environment)
        #expect(final.status == 0, "\(final)")
        #expect(final.stdout.contains("re-sealed \(total - previous) value(s) under key k2"), "\(final.stdout)")
        #expect(final.stdout.contains("no longer used, safe to remove from the keyring: k1"))
        try Self.expectIntact(db.store, seeded, box: try SecretBox(keys: [("k2", Self.newKey)]))
    }

    @Test(
        "serve refuses to start, in one line naming the key and its count, when a needed key is not listed",
        arguments: Backend.all
    )
    func serveRefusesMissingKey(_ backend: Backend) throws {
        let dir = try AccountImportCLITests.directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let db = try backend.database(forProcesses: true)
        _ = try Self.seed(db.store, box: try SecretBox(keys: [("k1", Self.oldKey)]), count: 2)
        let onlyNew = try Self.keyring(dir, "only-new", [("k2", Self.newKey)])
        let (exited, stderr) = try Self.serveRefusal(database: try #require(db.url), keyring: onlyNew)
        #expect(exited == 2, "\(stderr)")
        let lines = stderr.split(separator: "\n").filter { $0.hasPrefix("error:") }
        #expect(lines.count == 1, "\(stderr)")
        #expect(
            lines.first?.contains(
                "UPGRADE_SECRET_KEY_FILE: key 'k1' is needed by 7 sealed value(s) but is not in the keyring"
            ) == true,
            "\(stderr)"
        )
    }

    @Test(
        "a key id listed with other bytes than it named is refused by keys status, keys reseal and serve, naming the id",
        arguments: Backend.all
    )
    func keyIDWithOtherBytes(_ backend: Backend) throws {
        let dir = try AccountImportCLITests.directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let db = try backend.database(forProcesses: true)
        let url = try #require(db.url)
        let seeded = try Self.seed(db.store, box: try SecretBox(keys: [("k1", Self.oldKey)]), count: 2)
        // Rotation step 1 on the first host: k2 becomes the newest, and the reseal records its check.
        let rotated = try Self.keyring(dir, "rotated", [("k2", Self.newKey), ("k1", Self.oldKey)])
        let reseal = try runCLI(["keys", "reseal", "--db", url, "--secret-key-file", rotated])
        #expect(reseal.status == 0, "\(reseal)")

        // A second host generated its own k2.
        let other = [UInt8](repeating: 0x44, count: 32)
        let impostor = try Self.keyring(dir, "impostor", [("k2", other), ("k1", Self.oldKey)])
        let message = "UPGRADE_SECRET_KEY_FILE: key 'k2' is not the key that id named"
        let status = try runCLI(["keys", "status", "--db", url, "--secret-key-file", impostor])
        #expect(status.status == 1 && status.stdout.contains("MISMATCH: \(message)"), "\(status)")
        let refused = try runCLI(["keys", "reseal", "--db", url, "--secret-key-file", impostor])
        #expect(refused.status == 2, "\(refused)")
        #expect(refused.stderr.hasPrefix("error: \(message)"), "\(refused.stderr)")
        #expect(!refused.stderr.contains(Data(other).base64EncodedString()), "never the key")

        let (exited, stderr) = try Self.serveRefusal(database: url, keyring: impostor)
        #expect(exited == 2 && stderr.contains(message), "\(stderr)")

        // The first host's keyring still reads everything.
        try Self.expectIntact(db.store, seeded, box: try SecretBox(keys: [("k2", Self.newKey), ("k1", Self.oldKey)]))
        #expect(try runCLI(["keys", "status", "--db", url, "--secret-key-file", rotated]).status == 0)
    }
}
