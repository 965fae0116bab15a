import AppleEmulator
import Foundation
import Glibc
import Testing
import UpgradeAPI
import UpgradeEngine
import UpgradeTestSupport

/// `upgrade-cli accounts delete` killed with SIGKILL at random moments: before, during or after its
/// deletion commits, or while it waits to retry Apple. Whatever the moment, an account is either
/// whole (no tombstone, nothing queued, nothing revoked) or gone with its tombstone and its refresh
/// token queued or revoked; the queue is then sent by `serve`'s worker or a rerun, and Apple sees
/// each token revoked once, or twice when the kill fell between Apple's 200 and the commit marking
/// the row done: delivery is at least once (docs/architecture.md §7.1), and only such a token may
/// be sent again.
@Suite("upgrade-cli accounts delete killed with SIGKILL")
struct AccountDeletionCrashTests {
    static let accounts = 6

    @Test(
        "each account whole or deleted with its revocation queued or sent; every token revoked, twice only if killed after Apple's answer",
        arguments: Backend.all
    )
    func killedAtRandomMoments(_ backend: Backend) async throws {
        let harness = try AccountDeletionEndToEndTests.Harness(backend, revocationIntervalMilliseconds: 50)
        let server = harness.server
        // The worker would race the killed runs for the queue; it runs once they are over.
        server.application.revocationWorker.stop()
        var converted: [(username: String, accountID: String, refreshToken: String)] = []
        for index in 0..<Self.accounts {
            let appleUser = try harness.emulator.createUser(email: "user\(index)@example.com")
            let (accountID, _, refreshToken) = try await harness.converted("user\(index)", appleUser: appleUser)
            converted.append(("user\(index)", accountID, refreshToken))
        }
        let environment = try AccountsDeleteCLITests.appleEnvironment(harness)
        let executable = try UpgradeCLI.executable()

        var generator = SystemRandomNumberGenerator()
        for (index, account) in converted.enumerated() {
            // Half the runs find Apple failing, so they are killed while they wait to retry.
            if index.isMultiple(of: 2) {
                try harness.emulator.injectFaults([503, 503, 503], endpoint: AppleIDEmulator.revokePath)
            }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = ["accounts", "delete", account.username, "--yes", "--dev"]
            process.environment = ["PATH": "/usr/bin:/bin"].merging(environment) { $1 }
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            try await Task.sleep(for: .milliseconds(Int.random(in: 0...400, using: &generator)))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            // Faults a killed run did not use up must not reach the next run.
            harness.emulator.clearFaults(endpoint: AppleIDEmulator.revokePath)
        }

        // The invariant, whatever the moment of each kill.
        let queued = Set(
            try server.application.store.read { try $0.pendingAppleRevocations(limit: 100) }.map(\.accountID)
        )
        // Revoked and still queued: killed after Apple's 200, before the row was marked done.
        var sentBeforeTheCommit: Set<String> = []
        for account in converted {
            let (exists, trail) = try server.application.store.read { tx in
                (
                    try tx.account(id: account.accountID) != nil,
                    try tx.auditTrail(accountID: account.accountID, limit: 100)
                )
            }
            let tombstones = trail.filter { $0.event == "account.deleted" }.count
            let revocations = harness.emulator.revocationCount(token: account.refreshToken)
            if exists {
                #expect(tombstones == 0, "\(account.username): whole, so no tombstone")
                #expect(revocations == 0 && !queued.contains(account.accountID), "\(account.username): whole")
            } else {
                #expect(tombstones == 1, "\(account.username): gone, with one tombstone")
                #expect(
                    revocations == 1 || queued.contains(account.accountID),
                    "\(account.username): gone, so its token is revoked or queued"
                )
                #expect(revocations <= 1, "\(account.username): one run sends a token once")
                if revocations == 1 && queued.contains(account.accountID) {
                    sentBeforeTheCommit.insert(account.accountID)
                }
            }
        }

        // Reruns finish what was not deleted; the worker sends whatever is queued.
        for account in converted
        where try server.application.store.read({ try $0.account(id: account.accountID) }) != nil {
            let rerun = try runCLI(
                ["accounts", "delete", account.username, "--yes", "--dev"],
                environment: environment
            )
            #expect(rerun.status == 0, "\(rerun.stderr)")
        }
        server.application.revocationWorker.start()
        var left = 1
        for _ in 0..<80 where left > 0 {
            server.clock.advance(5)
            try await Task.sleep(for: .milliseconds(100))
            left = try server.application.store.read { try $0.pendingAppleRevocationCount() }
        }
        #expect(left == 0)
        for account in converted {
            let revocations = harness.emulator.revocationCount(token: account.refreshToken)
            if sentBeforeTheCommit.contains(account.accountID) {
                #expect((1...2).contains(revocations), "\(account.username): sent again at most once")
            } else {
                #expect(revocations == 1, "\(account.username)")
            }
            let tombstones = try server.application.store.read { tx in
                try tx.auditTrail(accountID: account.accountID, limit: 100).filter { $0.event == "account.deleted" }
            }
            #expect(tombstones.count == 1, "\(account.username)")
        }
    }
}
