import Foundation
import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

/// The migration report (`ReportService`) after a scripted history driven through the services, on
/// every backend: each count equals the one the script kept while it made the history.
@Suite("Migration report")
struct MigrationReportTests {
    typealias H = UpgradeHarness
    typealias Outcomes = MigrationReport.Outcomes
    let now = H.now
    /// The first second of the day after `now`'s (UTC).
    var nextDay: Int64 { (H.now / 86400 + 1) * 86400 }

    /// What the script expects, per entry, as it goes.
    struct Expected {
        var upgrades: [String: Outcomes] = [:]
        var passwordChanges: [String: Outcomes] = [:]
        var upgradeSeconds: [Int64] = []

        static func total(_ byEntry: [String: Outcomes]) -> Outcomes {
            var total = Outcomes()
            for outcomes in byEntry.values {
                total.started += outcomes.started
                total.credentialAccepted += outcomes.credentialAccepted
                total.stepUpRequired += outcomes.stepUpRequired
                total.reachedApple += outcomes.reachedApple
                total.completed += outcomes.completed
                total.cancelled.merge(outcomes.cancelled, uniquingKeysWith: +)
                total.failed.merge(outcomes.failed, uniquingKeysWith: +)
                total.expired += outcomes.expired
                total.superseded += outcomes.superseded
            }
            return total
        }

        static func byEntry(_ given: [String: Outcomes]) -> [String: Outcomes] {
            var all = Dictionary(uniqueKeysWithValues: MigrationReport.Flow.entries.map { ($0, Outcomes()) })
            all.merge(given) { $1 }
            return all
        }
    }

    func credential(_ answer: UpgradeAnswer, sub: String) -> UpgradeService.AppleCredential {
        UpgradeService.AppleCredential(
            identityToken: H.identityToken(sub: sub, nonce: answer.nonce),
            authorizationCode: "c." + SecureRandom.token(),
            state: answer.state ?? ""
        )
    }

    func sub(_ index: Int) -> String { "001234.\(String(repeating: "0", count: 31))\(index % 10).\(1000 + index)" }

    func code(_ secret: [UInt8], at time: Int64) -> String {
        TOTP.code(secret: secret, parameters: .standard, counter: UInt64(time / 30))
    }

    /// Upgrades on `now`'s day, password changes on the next; returns what the script counted.
    func script(_ h: UpgradeHarness) async throws -> Expected {
        var expected = Expected()
        let service = h.service
        let secret = Array("12345678901234567890".utf8)
        var subs = 0
        func nextSub() -> String {
            subs += 1
            // Apple's code exchange answers for the user the identity token names.
            h.apple.codesBelong(to: sub(subs))
            return sub(subs)
        }

        // Completed without a second factor (silent), in 5 s.
        try h.addAccount("done-silent", password: "pw")
        let silent = try service.start(
            username: "done-silent",
            password: "pw",
            serviceIdentifier: "s",
            entry: .silent,
            now: now
        )
        _ = try await service.submitAppleCredential(id: silent.id, credential(silent, sub: nextSub()), now: now + 5)
        expected.upgrades["silent", default: Outcomes()].started += 1
        expected.upgrades["silent"]!.credentialAccepted += 1
        expected.upgrades["silent"]!.reachedApple += 1
        expected.upgrades["silent"]!.completed += 1
        expected.upgradeSeconds.append(5)

        // Completed after a TOTP step-up (with UI), in 40 s.
        try h.addAccount("done-stepup", password: "pw", totpSecret: secret)
        let stepped = try service.start(
            username: "done-stepup",
            password: "pw",
            serviceIdentifier: "s",
            entry: .withUI,
            now: now + 10
        )
        #expect(stepped.status == .stepUpRequired)
        let accepted = try service.stepUp(id: stepped.id, code: .totp(code(secret, at: now + 30)), now: now + 30)
        _ = try await service.submitAppleCredential(id: stepped.id, credential(accepted, sub: nextSub()), now: now + 50)
        expected.upgrades["withUI", default: Outcomes()].started += 1
        expected.upgrades["withUI"]!.credentialAccepted += 1
        expected.upgrades["withUI"]!.stepUpRequired += 1
        expected.upgrades["withUI"]!.reachedApple += 1
        expected.upgrades["withUI"]!.completed += 1
        expected.upgradeSeconds.append(40)

        // In-app with a ticket, completed in 3 s.
        try h.addAccount("done-ticket", password: "pw")
        let ticket = try service.issueTicket(
            username: "done-ticket",
            secondFactorVerified: false,
            issuedBy: "backend",
            now: now + 60
        )
        let inApp = try service.start(
            username: "done-ticket",
            password: "",
            ticket: ticket.ticket,
            serviceIdentifier: "s",
            entry: .silent,
            now: now + 60
        )
        _ = try await service.submitAppleCredential(id: inApp.id, credential(inApp, sub: nextSub()), now: now + 63)
        expected.upgrades["ticket", default: Outcomes()].started += 1
        expected.upgrades["ticket"]!.credentialAccepted += 1
        expected.upgrades["ticket"]!.reachedApple += 1
        expected.upgrades["ticket"]!.completed += 1
        expected.upgradeSeconds.append(3)

        // Cancelled at Apple's sheet, once by each ASExtensionError reason; one by a client that
        // did not say its entry.
        for (index, reason) in ASExtensionErrorCode.allCases.enumerated() {
            let entry: FlowEntry? = index == 0 ? nil : (index % 2 == 0 ? .silent : .withUI)
            try h.addAccount("cancel-\(index)", password: "pw")
            let started = try service.start(
                username: "cancel-\(index)",
                password: "pw",
                serviceIdentifier: "s",
                entry: entry,
                now: now + 100
            )
            _ = try service.cancel(id: started.id, reason: reason, now: now + 101)
            let key = entry?.rawValue ?? "unknown"
            expected.upgrades[key, default: Outcomes()].started += 1
            expected.upgrades[key]!.credentialAccepted += 1
            expected.upgrades[key]!.reachedApple += 1
            expected.upgrades[key]!.cancelled[reason.name, default: 0] += 1
        }

        // Failed: a wrong password, an unknown username, Apple refusing the code.
        try h.addAccount("wrong", password: "pw")
        for username in ["wrong", "nobody"] {
            do {
                _ = try service.start(
                    username: username,
                    password: "not-it",
                    serviceIdentifier: "s",
                    entry: .silent,
                    now: now + 200
                )
                Issue.record("a wrong password was accepted")
            } catch {
                #expect(error.kind == .invalidCredentials)
            }
            expected.upgrades["silent"]!.started += 1
            expected.upgrades["silent"]!.failed["invalid-credentials", default: 0] += 1
        }
        // Apple refusing the code, then Apple down: each counted under the slug its call was answered with.
        for (username, code, kind, slug, at) in [
            (
                "apple-says-no", AppleEndpointError.Code.invalidGrant, ServiceFailure.Kind.invalidAuthorizationCode,
                "invalid-authorization-code", 210
            ),
            ("apple-is-down", .unavailable, .appleUnavailable, "apple-unavailable", 212),
        ] {
            try h.addAccount(username, password: "pw")
            let started = try service.start(
                username: username,
                password: "pw",
                serviceIdentifier: "s",
                entry: .withUI,
                now: now + Int64(at)
            )
            h.apple.fail(with: code)
            do {
                _ = try await service.submitAppleCredential(
                    id: started.id,
                    credential(started, sub: nextSub()),
                    now: now + Int64(at) + 1
                )
                Issue.record("\(code) at Apple completed the upgrade")
            } catch {
                #expect(error.kind == kind && error.status == .failed, "\(error)")
            }
            h.apple.fail(with: nil)
            expected.upgrades["withUI"]!.started += 1
            expected.upgrades["withUI"]!.credentialAccepted += 1
            expected.upgrades["withUI"]!.reachedApple += 1
            expected.upgrades["withUI"]!.failed[slug, default: 0] += 1
        }

        // Expired: the cancel arrives after the deadline.
        try h.addAccount("late", password: "pw")
        let late = try service.start(
            username: "late",
            password: "pw",
            serviceIdentifier: "s",
            entry: .silent,
            now: now + 300
        )
        _ = try? service.cancel(id: late.id, reason: .userCanceled, now: now + 300 + 3600)
        expected.upgrades["silent"]!.started += 1
        expected.upgrades["silent"]!.credentialAccepted += 1
        expected.upgrades["silent"]!.reachedApple += 1
        expected.upgrades["silent"]!.expired += 1

        // Superseded: the silent call's upgrade, by the call with UI (left open at Apple's sheet).
        try h.addAccount("twice", password: "pw")
        _ = try service.start(username: "twice", password: "pw", serviceIdentifier: "s", entry: .silent, now: now + 400)
        _ = try service.start(username: "twice", password: "pw", serviceIdentifier: "s", entry: .withUI, now: now + 401)
        expected.upgrades["silent"]!.started += 1
        expected.upgrades["silent"]!.credentialAccepted += 1
        expected.upgrades["silent"]!.reachedApple += 1
        expected.upgrades["silent"]!.superseded += 1
        expected.upgrades["withUI"]!.started += 1
        expected.upgrades["withUI"]!.credentialAccepted += 1
        expected.upgrades["withUI"]!.reachedApple += 1

        // The next day: password changes. One completes at once and ends the open upgrade of its
        // account (failed, credentials-changed).
        let day2 = nextDay + 3600
        try h.addAccount("changer", password: "pw")
        _ = try service.start(username: "changer", password: "pw", serviceIdentifier: "s", entry: .silent, now: day2)
        expected.upgrades["silent"]!.started += 1
        expected.upgrades["silent"]!.credentialAccepted += 1
        expected.upgrades["silent"]!.reachedApple += 1
        let changed = try service.startPasswordChange(
            username: "changer",
            password: "pw",
            newPassword: "A much stronger password 1!",
            serviceIdentifier: "s",
            entry: .silent,
            now: day2 + 10
        )
        #expect(changed.status == .completed)
        expected.upgrades["silent"]!.failed["credentials-changed", default: 0] += 1
        expected.passwordChanges["silent", default: Outcomes()].started += 1
        expected.passwordChanges["silent"]!.credentialAccepted += 1
        expected.passwordChanges["silent"]!.completed += 1

        // A wrong current password.
        do {
            _ = try service.startPasswordChange(
                username: "changer",
                password: "not-it",
                newPassword: "A much stronger password 2!",
                serviceIdentifier: "s",
                entry: .withUI,
                now: day2 + 20
            )
            Issue.record("a wrong password was accepted")
        } catch {
            #expect(error.kind == .invalidCredentials)
        }
        expected.passwordChanges["withUI", default: Outcomes()].started += 1
        expected.passwordChanges["withUI"]!.failed["invalid-credentials", default: 0] += 1

        // A TOTP account: the silent call's change waits for a code and is superseded by the call
        // with UI, which the user cancels.
        try h.addAccount("changer-totp", password: "pw", totpSecret: secret)
        for entry in [FlowEntry.silent, .withUI] {
            let open = try service.startPasswordChange(
                username: "changer-totp",
                password: "pw",
                newPassword: "A much stronger password 3!",
                serviceIdentifier: "s",
                entry: entry,
                now: day2 + 30
            )
            #expect(open.status == .stepUpRequired)
            expected.passwordChanges[entry.rawValue, default: Outcomes()].started += 1
            expected.passwordChanges[entry.rawValue]!.credentialAccepted += 1
            expected.passwordChanges[entry.rawValue]!.stepUpRequired += 1
            if entry == .withUI {
                _ = try service.cancelPasswordChange(id: open.id, reason: .userCanceled, now: day2 + 40)
                expected.passwordChanges["withUI"]!.cancelled["userCanceled", default: 0] += 1
            }
        }
        expected.passwordChanges["silent"]!.superseded += 1
        return expected
    }

    @Test("the report of a scripted history equals the script's counts", arguments: Backend.all)
    func scriptedHistory(_ backend: Backend) async throws {
        let h = try UpgradeHarness(backend: backend)
        let expected = try await script(h)
        let reports = ReportService(store: h.store)
        let end = nextDay + 86400
        let report = try reports.report(since: nil, until: nil, now: end)

        #expect(report.upgrades.byEntry == Expected.byEntry(expected.upgrades))
        #expect(report.upgrades.total == Expected.total(expected.upgrades))
        #expect(report.passwordChanges.byEntry == Expected.byEntry(expected.passwordChanges))
        #expect(report.passwordChanges.total == Expected.total(expected.passwordChanges))
        #expect(report.upgrades.total.cancelled.count == ASExtensionErrorCode.allCases.count)

        // Per day: the upgrades on the first, the password changes (and one upgrade) on the second.
        let first = RFC3339.dayString(now / 86400)
        let second = RFC3339.dayString(nextDay / 86400)
        #expect(report.upgrades.perDay.map(\.day) == [first, second])
        #expect(report.upgrades.perDay.first?.outcomes.completed == 3)
        #expect(report.passwordChanges.perDay.map(\.day) == [second])

        // The funnel and the median of 5, 40 and 3 seconds.
        let total = report.upgrades.total
        #expect(
            report.upgrades.funnel.steps.map(\.count)
                == [total.started, total.credentialAccepted, total.reachedApple, total.completed]
        )
        #expect(report.upgrades.funnel.steps.last?.rateFromStart == FlowTally.rate(3, of: total.started))
        #expect(report.upgrades.funnel.medianSecondsToComplete == 5)
        #expect(report.passwordChanges.funnel.medianSecondsToComplete == 0)

        // Accounts: each completed upgrade converted one; no account was created or deleted through a service.
        let added = 14
        #expect(report.accounts == MigrationReport.Accounts(password: added - 3, legacyPassword: 0, appleOnly: 3))
        #expect(report.accountsPerDay.map(\.day) == [first])
        #expect(report.accountsPerDay.first?.converted == 3)
        #expect(report.accountsPerDay.first?.onPasswordsAtEnd == added - 3)

        // A window of the second day alone.
        let window = try reports.report(since: nextDay, until: end, now: end)
        #expect(window.upgrades.total.completed == 0 && window.upgrades.total.started == 1)
        #expect(window.passwordChanges.total == report.passwordChanges.total)
        #expect(window.since == RFC3339.utc(seconds: nextDay))

        // The document holds the same report.
        #expect(MigrationReport(jsonDocument: report.jsonDocument) == report)
    }

    @Test(
        "a team transfer: records per state and the window's end, as `transfer status` counts them",
        arguments: Backend.all
    )
    func transfer(_ backend: Backend) async throws {
        let world = try TransferWorld(backend: backend)
        _ = try (0..<4).map { try world.addLinkedUser("user\($0)") }
        _ = try await world.prepare()
        let now = world.clock.value.withLock { $0 }
        let prepared = try ReportService(store: world.database.store).report(since: nil, until: nil, now: now)
        #expect(prepared.transfer.byStatus["transferPrepared"] == 4 && prepared.transfer.untouchedLinkedAccounts == 0)
        #expect(Set(prepared.transfer.byStatus.keys) == Set(TransferStatus.allCases.map(\.rawValue)))
        #expect(prepared.transfer.windowEndsAt == nil)

        let windowEndsAt = try world.transferApp()
        _ = try await world.complete(windowEndsAt: windowEndsAt)
        let later = world.clock.value.withLock { $0 }
        let completed = try ReportService(store: world.database.store).report(since: nil, until: nil, now: later)
        let status = try TransferService.status(store: world.database.store, now: later)
        #expect(
            completed.transfer.byStatus
                == Dictionary(uniqueKeysWithValues: status.counts.map { ($0.key.rawValue, $0.value) })
        )
        #expect(completed.transfer.byStatus.values.reduce(0, +) == 4)
        #expect(completed.transfer.windowEndsAt == RFC3339.utc(seconds: windowEndsAt))
    }

    @Test("a window that ends before it starts is a validation failure", arguments: Backend.all)
    func emptyWindow(_ backend: Backend) throws {
        let h = try UpgradeHarness(backend: backend)
        #expect(throws: ServiceFailure.self) {
            try ReportService(store: h.store).report(since: now, until: now, now: now)
        }
        let empty = try ReportService(store: h.store).report(since: nil, until: nil, now: now)
        #expect(empty.upgrades.total == Outcomes() && empty.accounts.total == 0 && empty.accountsPerDay.isEmpty)
        #expect(empty.upgrades.funnel.steps.map(\.rateFromPrevious) == [nil, nil, nil, nil])
        #expect(empty.upgrades.funnel.medianSecondsToComplete == nil)
    }
}
