import Foundation
import Testing
import UpgradeAPI
import UpgradeEngine
import UpgradeTestSupport

/// `UPGRADE_MAX_QUEUE_DELAY_MS` and `UPGRADE_APPLE_LINK_CHECK_RATE`: what they accept, the one line
/// each refusal is, and that the values reach the API server and the Apple link checker.
@Suite("Operating limit settings")
struct OperatingLimitSettingsTests {
    static let queueDelay = "UPGRADE_MAX_QUEUE_DELAY_MS"
    static let rate = "UPGRADE_APPLE_LINK_CHECK_RATE"

    @Test("both default to the built-in limits: 500 ms of queueing, 10 checks a second")
    func defaults() throws {
        let settings = try SettingsProbe().load([:])
        #expect(settings.maxQueueDelay == .milliseconds(500))
        #expect(settings.maxQueueDelay == HTTPServer.Configuration().maxQueueDelay)
        #expect(settings.appleLinkCheckRate == 10)
        #expect(settings.appleLinkCheckRate == AppleLinkChecker.Policy().checksPerSecond)
    }

    @Test(
        "UPGRADE_MAX_QUEUE_DELAY_MS takes whole milliseconds from 10 to 60000",
        arguments: [("10", 10), ("500", 500), ("2500", 2500), ("60000", 60_000), (" 750 ", 750)] as [(String, Int64)]
    )
    func queueDelay(_ text: String, _ milliseconds: Int64) throws {
        #expect(try SettingsProbe().load([Self.queueDelay: text]).maxQueueDelay == .milliseconds(milliseconds))
    }

    @Test(
        "UPGRADE_MAX_QUEUE_DELAY_MS refuses anything else in one line",
        arguments: ["0", "9", "60001", "-5", "+500", "1.5", "500ms", "1e3", "many", "99999999999999999999"]
    )
    func badQueueDelay(_ text: String) {
        let found = SettingsProbe().problems([Self.queueDelay: text])
        let line = "UPGRADE_MAX_QUEUE_DELAY_MS: expected whole milliseconds from 10 to 60000, e.g. 500 (the default)"
        #expect(found == [line], "\(text): \(found)")
    }

    @Test(
        "UPGRADE_APPLE_LINK_CHECK_RATE takes a decimal number of checks a second from 0.001 to 1000",
        arguments: [("0.001", 0.001), (".5", 0.5), ("2.75", 2.75), ("10", 10), ("40.", 40), ("1000", 1000)]
            as [(String, Double)]
    )
    func rate(_ text: String, _ perSecond: Double) throws {
        #expect(try SettingsProbe().load([Self.rate: text]).appleLinkCheckRate == perSecond)
    }

    @Test(
        "UPGRADE_APPLE_LINK_CHECK_RATE refuses 0, negatives, values out of range and what is not a number, in one line",
        arguments: [
            "0", "0.0", "0.0009", "-1", "-0.5", "1000.01", "1e3", "+5", "inf", "nan", "ten", "1,5", "1.2.3", ".",
        ]
    )
    func badRate(_ text: String) {
        let found = SettingsProbe().problems([Self.rate: text])
        #expect(found.count == 1, "\(text): \(found)")
        #expect(
            found.first?.hasPrefix(
                "UPGRADE_APPLE_LINK_CHECK_RATE: expected checks per second per instance, a decimal number from 0.001 to 1000"
            ) == true,
            "\(text): \(found)"
        )
    }

    @Test("both refused at once are two lines, one per variable")
    func bothRefused() {
        let found = SettingsProbe().problems([Self.queueDelay: "5", Self.rate: "0"])
        #expect(found.count == 2)
        #expect(found.contains { $0.hasPrefix("UPGRADE_MAX_QUEUE_DELAY_MS: ") })
        #expect(found.contains { $0.hasPrefix("UPGRADE_APPLE_LINK_CHECK_RATE: ") })
    }

    @Test("the configured queue delay reaches the API server, and the rate the link checker's policy")
    func valuesReachTheServer() throws {
        let server = try DevServer(environment: [Self.queueDelay: "2500", Self.rate: "0.5"])
        #expect(server.application.server.configuration.maxQueueDelay == .milliseconds(2500))
        let policy = try #require(server.application.linkCheckWorker?.checker.policy)
        #expect(policy.checksPerSecond == 0.5)
        #expect(policy.periodSeconds == ServerSettings.defaultAppleLinkCheckSeconds)
        // The slower rate also sizes the claims (AppleLinkCheckPolicyTests).
        #expect(policy.batchSize == AppleLinkChecker.Policy(checksPerSecond: 0.5).batchSize)
        #expect(policy.claimSeconds == AppleLinkChecker.Policy(checksPerSecond: 0.5).claimSeconds)

        let defaults = try DevServer()
        #expect(defaults.application.server.configuration.maxQueueDelay == .milliseconds(500))
        #expect(defaults.application.linkCheckWorker?.checker.policy.checksPerSecond == 10)
    }

    @Test("serve refuses a bad value, from a flag or the environment, with one line and exit 2, opening nothing")
    func serveRefuses() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("limits-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = "sqlite:" + directory.appendingPathComponent("absent/db.sqlite").path
        let serve = ["serve", "--dev", "--listen", "127.0.0.1:0", "--db", database]
        let runs = [
            (try runCLI(serve + ["--max-queue-delay-ms", "5"]), "error: UPGRADE_MAX_QUEUE_DELAY_MS: "),
            (try runCLI(serve, environment: [Self.queueDelay: "61000"]), "error: UPGRADE_MAX_QUEUE_DELAY_MS: "),
            (try runCLI(serve + ["--apple-link-check-rate", "0"]), "error: UPGRADE_APPLE_LINK_CHECK_RATE: "),
            (try runCLI(serve, environment: [Self.rate: "-3"]), "error: UPGRADE_APPLE_LINK_CHECK_RATE: "),
        ]
        for (run, prefix) in runs {
            #expect(run.status == 2, "\(run.stderr)")
            #expect(run.stderr.hasPrefix(prefix), "\(run.stderr)")
            #expect(run.stderr.split(separator: "\n").count == 1, "\(run.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: directory.path), "nothing was opened or created")
        let help = try runCLI(["serve", "--help"]).stdout
        #expect(help.contains("--max-queue-delay-ms MS") && help.contains("--apple-link-check-rate PER_SECOND"))
    }
}
