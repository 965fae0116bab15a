import Foundation
import Testing
import UpgradeAPI
import UpgradeClient
import UpgradeEngine
import UpgradeTestSupport

@testable import AccountModificationExtension

/// The example extension's flow (Examples/AccountModificationExtension, everything but the UIKit
/// shell) on every path the system can start, against the server on loopback with its Apple
/// emulator as the sheet: each request ends exactly once, and how.
@Suite("The example extension's flow")
@MainActor
struct AccountModificationFlowTests {
    /// The server, the client as the flow uses it, the system's side, and the flow.
    @MainActor
    final class Fixture {
        let harness: TicketHarness
        let transport: FaultyTransport
        let upgrades: InterposedUpgrades
        let system: FakeSystem
        let flow: AccountModificationFlow
        var server: DevServer { harness.server }

        init(
            _ backend: Backend = .sqlite,
            faults: [(suffix: String, fault: FaultyTransport.Fault)] = [],
            retryPolicy: RetryPolicy = UpgradeClientRetryTests.quick,
            holdStepUp: Gate? = nil,
            holdStepUpAnswer: Gate? = nil,
            holdChangeAnswer: Gate? = nil,
            holdCredentialAnswer: Gate? = nil,
            holdCancel: Gate? = nil,
            sheet: FakeSystem.Sheet? = nil,
            cleanupTimeout: TimeInterval = 3
        ) throws {
            harness = try TicketHarness(backend)
            transport = FaultyTransport(faults)
            upgrades = InterposedUpgrades(
                transport.client(harness.server.base, retryPolicy: retryPolicy),
                holdStepUp: holdStepUp,
                holdStepUpAnswer: holdStepUpAnswer,
                holdChangeAnswer: holdChangeAnswer,
                holdCredentialAnswer: holdCredentialAnswer,
                holdCancel: holdCancel
            )
            system = sheet.map(FakeSystem.init(sheet:)) ?? FakeSystem(harness.server)
            flow = AccountModificationFlow(client: upgrades, system: system, cleanupTimeout: cleanupTimeout)
        }

        /// Until the call in flight (if any) has ended.
        func settled() async {
            while let work = flow.work { await work.value }
        }

        func status(_ upgradeID: String?) async throws -> String {
            try await upgrades.real.status(upgradeID: try #require(upgradeID)).status
        }

        func credentialKind(_ username: String) throws -> CredentialKind? {
            try server.application.store.read { try $0.account(username: try Username(username)) }?.credentialKind
        }

        /// Whether `password` is the account's: an upgrade started with it gets past the password check.
        func passwordWorks(_ username: String, _ password: String) async -> Bool {
            (try? await upgrades.real.startUpgrade(username: username, password: password, serviceIdentifier: "s"))
                != nil
        }

        func demoTOTPFlow(
            userInfo: [AnyHashable: Any]? = nil,
            password: String = DevelopmentEnvironment.demoPassword
        )
            async
        {
            flow.prepareToConvert(
                user: DevelopmentEnvironment.demoUsername,
                password: password,
                serviceIdentifier: "s",
                userInfo: userInfo
            )
            await settled()
        }
    }

    static let demo = DevelopmentEnvironment.demoUsername
    static let strong = "abcdEf-ghijK1-lmnoPq"

    @Test("convert without UI: completed once, with Apple's first name and email forwarded")
    func convertWithoutUI() async throws {
        let fixture = try Fixture()
        fixture.flow.convertWithoutUserInteraction(
            user: "plain",
            password: "pw-plain",
            serviceIdentifier: "s",
            userInfo: nil
        )
        #expect(await fixture.system.outcome() == .upgraded)
        await fixture.settled()
        #expect(fixture.system.outcomes == [.upgraded] && fixture.system.sheetsShown == 1)
        #expect(fixture.system.screens.isEmpty, "no UI on this path")
        #expect(fixture.upgrades.calls == ["startUpgrade", "submitAppleCredential"])
        #expect(try fixture.credentialKind("plain") == .appleOnly)
        // The migration report tells the silent path from the one with UI by this field.
        #expect(try #require(fixture.transport.sent("/v1/upgrades").first?.json)["entry"] as? String == "silent")
        let sent = try #require(fixture.transport.sent("/apple-credential").first?.json)
        #expect(sent["fullName"] as? [String: String] == ["givenName": "Demo", "familyName": "User"])
        #expect((sent["email"] as? String)?.contains("@") == true)
        // The server kept them: Apple gives them this once.
        let store = fixture.server.application.store
        let profile = try store.read { tx in
            try tx.account(username: try Username("plain")).flatMap { try tx.accountProfile(accountID: $0.id) }
        }
        #expect(profile?.displayName == "Demo User" && profile?.displayNameSource == .device)
        #expect(profile?.email == sent["email"] as? String && profile?.emailSource == .device)
    }

    @Test("convert without UI on a TOTP account: the upgrade ends as userInteractionRequired, so does the request")
    func convertWithoutUINeedsUI() async throws {
        let fixture = try Fixture()
        fixture.flow.convertWithoutUserInteraction(
            user: Self.demo,
            password: DevelopmentEnvironment.demoPassword,
            serviceIdentifier: "s",
            userInfo: nil
        )
        #expect(await fixture.system.outcome() == .cancelled(.userInteractionRequired, failureReason: nil))
        #expect(fixture.upgrades.calls == ["startUpgrade", "cancel(userInteractionRequired)"])
        #expect(try await fixture.status(fixture.upgrades.upgradeID) == "cancelled")
        #expect(fixture.system.sheetsShown == 0 && fixture.system.screens.isEmpty)
    }

    @Test("the step-up UI: attempts shown, input disabled in flight, a double tap sends one code, then done")
    func stepUpScreen() async throws {
        let fixture = try Fixture()
        await fixture.demoTOTPFlow()
        let asking = try #require(fixture.system.lastScreen)
        #expect(asking.codeKind == .authenticatorCode && asking.prompt == FlowText.prompt(for: .authenticatorCode))
        #expect(!asking.isBusy && asking.acceptsInput && asking.attemptsText == FlowText.attemptsLeft(5))
        #expect(fixture.system.screens.first == .checking, "nothing to type before the server answered")

        fixture.flow.submitCode("000000")
        #expect(fixture.system.lastScreen?.isBusy == true && fixture.system.lastScreen?.acceptsInput == false)
        fixture.flow.submitCode("000000")
        await fixture.settled()
        #expect(fixture.upgrades.calls.filter { $0 == "stepUp" }.count == 1, "the second tap sent nothing")
        let wrong = try #require(fixture.system.lastScreen)
        #expect(wrong.error == FlowText.wrongCode && wrong.attemptsText == FlowText.attemptsLeft(4) && !wrong.isBusy)
        #expect(fixture.system.outcomes.isEmpty)

        fixture.flow.submitCode(fixture.server.totpCode())
        #expect(await fixture.system.outcome() == .upgraded)
        await fixture.settled()
        #expect(fixture.system.outcomes == [.upgraded])
        #expect(try fixture.credentialKind(Self.demo) == .appleOnly)
        #expect(try #require(fixture.transport.sent("/v1/upgrades").first?.json)["entry"] as? String == "withUI")
    }

    @Test("the step-up UI offers a recovery code")
    func recoveryCode() async throws {
        let fixture = try Fixture()
        let codes = RecoveryCodes.generate(count: 1)
        let accountID = try #require(
            try fixture.server.application.store.read { try $0.account(username: try Username(Self.demo)) }?.id
        )
        try fixture.server.application.store.write { tx in
            try tx.insertRecoveryCodes(accountID: accountID, codeHashes: codes.map(RecoveryCodes.hash))
        }
        await fixture.demoTOTPFlow()
        #expect(fixture.system.lastScreen?.switchTitle == FlowText.switchTitle(from: .authenticatorCode))
        fixture.flow.switchCodeKind()
        let screen = try #require(fixture.system.lastScreen)
        #expect(screen.codeKind == .recoveryCode && screen.prompt == FlowText.prompt(for: .recoveryCode))
        fixture.flow.submitCode(codes[0])
        #expect(await fixture.system.outcome() == .upgraded)
        #expect(fixture.upgrades.calls.contains("stepUp(recoveryCode)"))
    }

    @Test("codes delayed by the server keep the screen up with the wait, in the person's language")
    func delayedCodes() async throws {
        let fixture = try Fixture()
        await fixture.demoTOTPFlow()
        var delayed: StepUpScreen?
        for _ in 0..<5 where delayed == nil {
            fixture.flow.submitCode("000000")
            await fixture.settled()
            if let screen = fixture.system.lastScreen, screen.error?.hasPrefix("Too many attempts") == true {
                delayed = screen
            }
        }
        let screen = try #require(delayed, "failures past the third are delayed")
        #expect(screen.acceptsInput && fixture.system.outcomes.isEmpty)
        #expect(try await fixture.status(fixture.upgrades.upgradeID) == "stepUpRequired")
    }

    @Test("Cancel on the step-up screen: the upgrade cancelled on the server first, then userCanceled, once")
    func cancelOnScreen() async throws {
        let fixture = try Fixture()
        await fixture.demoTOTPFlow()
        fixture.flow.cancelRequest()
        fixture.flow.cancelRequest()
        await fixture.flow.ending?.value
        #expect(fixture.system.outcomes == [.cancelled(.userCanceled, failureReason: nil)])
        #expect(fixture.upgrades.calls.filter { $0.hasPrefix("cancel") } == ["cancel(userCanceled)"])
        #expect(try await fixture.status(fixture.upgrades.upgradeID) == "cancelled")
        fixture.flow.submitCode(fixture.server.totpCode())
        await fixture.settled()
        #expect(fixture.system.outcomes.count == 1 && !fixture.upgrades.calls.contains("stepUp"))
    }

    @Test(
        "Cancel while a step-up is in flight: the call is cancelled, no sheet, nothing completes after",
        arguments: [false, true]
    )
    func cancelInFlight(answered: Bool) async throws {
        // Held before it is sent, or after the server accepted the code and moved on to Apple.
        let hold = Gate()
        let fixture = try Fixture(holdStepUp: answered ? nil : hold, holdStepUpAnswer: answered ? hold : nil)
        await fixture.demoTOTPFlow()
        fixture.flow.submitCode(fixture.server.totpCode())
        await fixture.upgrades.stepUpEntered.wait()
        if answered { while fixture.transport.sent("/step-up").isEmpty { await Task.yield() } }
        let inFlight = try #require(fixture.flow.work)
        fixture.flow.cancelRequest()
        await fixture.flow.ending?.value
        #expect(fixture.system.outcomes == [.cancelled(.userCanceled, failureReason: nil)])
        hold.open()
        await inFlight.value
        #expect(fixture.system.outcomes.count == 1, "no complete after the cancel")
        #expect(fixture.system.sheetsShown == 0, "no Apple sheet after the cancel")
        #expect(fixture.transport.sent("/step-up").count == (answered ? 1 : 0), "a cancelled call is not sent")
        #expect(try await fixture.status(fixture.upgrades.upgradeID) == "cancelled")
        #expect(try fixture.credentialKind(Self.demo) == .password)
    }

    @Test(
        "Cancel's clean-up is bounded: a server that never answers the cancel still lets the request end"
    )
    func cancelBounded() async throws {
        let never = Gate()
        defer { never.open() }
        let fixture = try Fixture(holdCancel: never, cleanupTimeout: 0.2)
        await fixture.demoTOTPFlow()
        fixture.flow.cancelRequest()
        let outcome = await fixture.system.outcome(within: 30)
        #expect(outcome == .cancelled(.userCanceled, failureReason: nil), "ended although the cancel never answered")
        #expect(fixture.upgrades.calls.contains("cancel(userCanceled)"))
    }

    /// When the answer of a call that changes the account arrives, against `cleanupTimeout`.
    enum AnswerTiming: String, CustomStringConvertible, CaseIterable {
        /// Within the bound: the call's own answer ends the request.
        case inTime
        /// After the bound: the server's answer to the cancel does.
        case late
        /// After the bound, and the cancel finds the upgrade `converting`: its status does.
        case lateWhileConverting

        var description: String { rawValue }
    }

    @Test(
        "Cancel while a password change without a second factor is in flight: the server completed it, so does the request",
        arguments: [false, true]
    )
    func cancelWhileChangeCompletes(withUI: Bool) async throws {
        let hold = Gate()
        defer { hold.open() }
        let fixture = try Fixture(holdChangeAnswer: hold)
        if withUI {
            fixture.flow.prepareToChangePassword(
                user: "plain",
                password: "pw-plain",
                newPassword: Self.strong,
                serviceIdentifier: "s",
                userInfo: nil
            )
        } else {
            fixture.flow.changePasswordWithoutUserInteraction(
                user: "plain",
                password: "pw-plain",
                newPassword: Self.strong,
                serviceIdentifier: "s",
                userInfo: nil
            )
        }
        await fixture.upgrades.answerHeld.wait()
        fixture.flow.cancelRequest()
        hold.open()
        #expect(await fixture.system.outcome() == .passwordChanged(user: "plain", newPassword: Self.strong))
        await fixture.flow.ending?.value
        await fixture.settled()
        #expect(fixture.system.outcomes.count == 1)
        #expect(fixture.upgrades.calls == ["changePassword"], "nothing left open to cancel")
        #expect(await fixture.passwordWorks("plain", Self.strong), "the Keychain gets the password that works")
    }

    @Test(
        "Cancel while a password change's start is in flight and a step-up is needed: no screen, the change cancelled"
    )
    func cancelBeforeChangeStepUp() async throws {
        let hold = Gate()
        defer { hold.open() }
        let fixture = try Fixture(holdChangeAnswer: hold)
        fixture.flow.prepareToChangePassword(
            user: Self.demo,
            password: DevelopmentEnvironment.demoPassword,
            newPassword: Self.strong,
            serviceIdentifier: "s",
            userInfo: nil
        )
        await fixture.upgrades.answerHeld.wait()
        fixture.flow.cancelRequest()
        hold.open()
        #expect(await fixture.system.outcome() == .cancelled(.userCanceled, failureReason: nil))
        await fixture.settled()
        #expect(fixture.system.screens == [.checking], "no step-up screen once cancelling")
        // The change the start opened, learnt after the cancel, is cancelled on the server.
        #expect(fixture.upgrades.calls == ["changePassword", "cancelPasswordChange(userCanceled)"])
        let store = fixture.server.application.store
        let account = try #require(try store.read { try $0.account(username: try Username(Self.demo)) })
        #expect(try store.read { try $0.openPasswordChanges(accountID: account.id, limit: 10) }.isEmpty)
        #expect(await fixture.passwordWorks(Self.demo, DevelopmentEnvironment.demoPassword))
    }

    @Test(
        "Cancel while a password change's step-up is in flight and completes it: the request completes",
        arguments: [AnswerTiming.inTime, .late]
    )
    func cancelWhileChangeStepUpCompletes(_ timing: AnswerTiming) async throws {
        let hold = Gate()
        defer { hold.open() }
        let fixture = try Fixture(holdStepUpAnswer: hold, cleanupTimeout: timing == .inTime ? 3 : 0.5)
        fixture.flow.prepareToChangePassword(
            user: Self.demo,
            password: DevelopmentEnvironment.demoPassword,
            newPassword: Self.strong,
            serviceIdentifier: "s",
            userInfo: nil
        )
        await fixture.settled()
        fixture.flow.submitCode(fixture.server.totpCode())
        await fixture.upgrades.answerHeld.wait()
        let screens = fixture.system.screens.count
        fixture.flow.cancelRequest()
        if timing == .inTime { hold.open() }
        #expect(await fixture.system.outcome() == .passwordChanged(user: Self.demo, newPassword: Self.strong))
        hold.open()
        await fixture.flow.ending?.value
        await fixture.settled()
        #expect(fixture.system.outcomes.count == 1 && fixture.system.screens.count == screens)
        // Late, the server's answer to the cancel says the change completed.
        let cancels = fixture.upgrades.calls.filter { $0.hasPrefix("cancelPasswordChange") }
        #expect(cancels == (timing == .inTime ? [] : ["cancelPasswordChange(userCanceled)"]))
        #expect(await fixture.passwordWorks(Self.demo, Self.strong))
    }

    @Test("Cancel while a password change's step-up never gets sent: the change cancelled, the request ends in time")
    func cancelWhileChangeStepUpStuck() async throws {
        let never = Gate()
        defer { never.open() }
        let fixture = try Fixture(holdStepUp: never, cleanupTimeout: 0.2)
        fixture.flow.prepareToChangePassword(
            user: Self.demo,
            password: DevelopmentEnvironment.demoPassword,
            newPassword: Self.strong,
            serviceIdentifier: "s",
            userInfo: nil
        )
        await fixture.settled()
        fixture.flow.submitCode(fixture.server.totpCode())
        await fixture.upgrades.stepUpEntered.wait()
        fixture.flow.cancelRequest()
        let outcome = await fixture.system.outcome(within: 10)
        #expect(outcome == .cancelled(.userCanceled, failureReason: nil), "ended although the step-up never answered")
        #expect(fixture.upgrades.calls.last == "cancelPasswordChange(userCanceled)")
        #expect(await fixture.passwordWorks(Self.demo, DevelopmentEnvironment.demoPassword))
    }

    @Test(
        "Cancel while the Apple credential is in flight and converts the account: completeUpgrade, not userCanceled",
        arguments: AnswerTiming.allCases
    )
    func cancelWhileCredentialConverts(_ timing: AnswerTiming) async throws {
        let hold = Gate()
        defer { hold.open() }
        let converting = FaultyTransport.Fault.problem(
            409,
            slug: "not-allowed-in-state",
            members: ["upgradeStatus": "converting"],
            retryAfter: nil
        )
        let fixture = try Fixture(
            faults: timing == .lateWhileConverting ? [("/cancel", converting)] : [],
            holdCredentialAnswer: hold,
            cleanupTimeout: timing == .inTime ? 3 : 0.5
        )
        fixture.flow.convertWithoutUserInteraction(
            user: "plain",
            password: "pw-plain",
            serviceIdentifier: "s",
            userInfo: nil
        )
        await fixture.upgrades.answerHeld.wait()
        fixture.flow.cancelRequest()
        if timing == .inTime { hold.open() }
        #expect(await fixture.system.outcome() == .upgraded)
        hold.open()
        await fixture.flow.ending?.value
        await fixture.settled()
        #expect(fixture.system.outcomes == [.upgraded])
        // Late, the server's answer to the cancel says the upgrade completed, or its status once converted.
        let calls = fixture.upgrades.calls
        let afterCredential = try #require(calls.firstIndex(of: "submitAppleCredential")).advanced(by: 1)
        let expected: [String] =
            switch timing {
            case .inTime: []
            case .late: ["cancel(userCanceled)"]
            case .lateWhileConverting: ["cancel(userCanceled)", "status"]
            }
        #expect(Array(calls[afterCredential...]) == expected)
        #expect(try fixture.credentialKind("plain") == .appleOnly)
    }

    @Test("Apple's sheet dismissed or failed: the upgrade cancelled on the server, the request with the matching code")
    func appleSheetEnds() async throws {
        for (thrown, expected) in [
            (AppleSheetError.canceled, FakeSystem.Outcome.cancelled(.userCanceled, failureReason: nil)),
            (AppleSheetError.failed, FakeSystem.Outcome.cancelled(.failed, failureReason: FlowText.appleUnavailable)),
        ] {
            let fixture = try Fixture(sheet: { _, _ in throw thrown })
            fixture.flow.convertWithoutUserInteraction(
                user: "plain",
                password: "pw-plain",
                serviceIdentifier: "s",
                userInfo: nil
            )
            #expect(await fixture.system.outcome() == expected)
            let reason = thrown == .canceled ? "cancel(userCanceled)" : "cancel(failed)"
            #expect(fixture.upgrades.calls == ["startUpgrade", reason])
            #expect(try await fixture.status(fixture.upgrades.upgradeID) == "cancelled")
            #expect(try fixture.credentialKind("plain") == .password)
        }
    }

    @Test("after Apple's sheet, lost answers are asked for again with the same state: converted and completed")
    func credentialRetried() async throws {
        let fixture = try Fixture(faults: [
            ("/apple-credential", .loseAnswer), ("/apple-credential", .busy(retryAfter: "0")),
            ("/apple-credential", .inProgress),
        ])
        fixture.flow.convertWithoutUserInteraction(
            user: "plain",
            password: "pw-plain",
            serviceIdentifier: "s",
            userInfo: nil
        )
        #expect(await fixture.system.outcome() == .upgraded)
        let sent = fixture.transport.sent("/apple-credential")
        #expect(sent.count == 4 && Set(sent.map { $0.json["state"] as? String }).count == 1)
        #expect(try fixture.credentialKind("plain") == .appleOnly)
    }

    @Test(
        "no answer at all before the client's deadline: the upgrade's status decides, so a converted account completes"
    )
    func credentialNeverAnswered() async throws {
        let fixture = try Fixture(
            faults: Array(repeating: ("/apple-credential", .loseAnswer), count: 1000),
            retryPolicy: RetryPolicy(deadline: 0.3, attemptTimeout: 5, initialBackoff: 0.05, maximumBackoff: 0.1)
        )
        fixture.flow.convertWithoutUserInteraction(
            user: "plain",
            password: "pw-plain",
            serviceIdentifier: "s",
            userInfo: nil
        )
        #expect(await fixture.system.outcome() == .upgraded)
        #expect(fixture.upgrades.calls.last == "status")
        #expect(try fixture.credentialKind("plain") == .appleOnly)
    }

    @Test(
        "an in-app upgrade: the silent call learns of the second factor, the interactive call presents the same ticket",
        arguments: Backend.all
    )
    func inAppUpgradeByTicket(_ backend: Backend) async throws {
        let silent = try Fixture(backend)
        let ticket = try await silent.harness.ticket(Self.demo)
        let userInfo: [AnyHashable: Any] = [AccountModificationFlow.ticketKey: ticket]
        silent.flow.convertWithoutUserInteraction(
            user: Self.demo,
            password: "",
            serviceIdentifier: "s",
            userInfo: userInfo
        )
        #expect(await silent.system.outcome() == .cancelled(.userInteractionRequired, failureReason: nil))

        // The system's interactive call: a new view controller, the same server, the same ticket.
        let system = FakeSystem(silent.server)
        let flow = AccountModificationFlow(client: silent.upgrades, system: system)
        flow.prepareToConvert(user: Self.demo, password: "", serviceIdentifier: "s", userInfo: userInfo)
        while let work = flow.work { await work.value }
        #expect(system.lastScreen?.acceptsInput == true && system.outcomes.isEmpty)
        flow.submitCode(silent.server.totpCode())
        #expect(await system.outcome() == .upgraded)
        #expect(try silent.credentialKind(Self.demo) == .appleOnly)
        silent.harness.expectNoSecrets([ticket])
    }

    @Test("strong-password change: without UI, a second factor sends it to the UI, which completes it")
    func passwordChange() async throws {
        let plain = try Fixture()
        plain.flow.changePasswordWithoutUserInteraction(
            user: "plain",
            password: "pw-plain",
            newPassword: Self.strong,
            serviceIdentifier: "s",
            userInfo: nil
        )
        #expect(await plain.system.outcome() == .passwordChanged(user: "plain", newPassword: Self.strong))

        let silent = try Fixture()
        let ticket = try await silent.harness.ticket(Self.demo)
        let userInfo: [AnyHashable: Any] = [AccountModificationFlow.ticketKey: ticket]
        silent.flow.changePasswordWithoutUserInteraction(
            user: Self.demo,
            password: "",
            newPassword: Self.strong,
            serviceIdentifier: "s",
            userInfo: userInfo
        )
        #expect(await silent.system.outcome() == .cancelled(.userInteractionRequired, failureReason: nil))
        // The silent call's change ended on the server first, leaving the ticket to the UI's call.
        #expect(silent.upgrades.calls == ["changePassword", "cancelPasswordChange(userInteractionRequired)"])

        let system = FakeSystem(silent.server)
        let flow = AccountModificationFlow(client: silent.upgrades, system: system)
        flow.prepareToChangePassword(
            user: Self.demo,
            password: "",
            newPassword: Self.strong,
            serviceIdentifier: "s",
            userInfo: userInfo
        )
        while let work = flow.work { await work.value }
        #expect(system.lastScreen?.attemptsText == FlowText.attemptsLeft(5))
        flow.submitCode("000000")
        while let work = flow.work { await work.value }
        #expect(
            system.lastScreen?.error == FlowText.wrongCode
                && system.lastScreen?.attemptsText == FlowText.attemptsLeft(4)
        )
        flow.submitCode(silent.server.totpCode())
        #expect(await system.outcome() == .passwordChanged(user: Self.demo, newPassword: Self.strong))
        let upgrade = try await silent.upgrades.real.startUpgrade(
            username: Self.demo,
            password: Self.strong,
            serviceIdentifier: "s"
        )
        #expect(upgrade.upgradeID.isEmpty == false, "the new password works")
    }

    @Test("Cancel on a password change's step-up screen: the change cancelled on the server, then userCanceled")
    func cancelPasswordChangeOnScreen() async throws {
        let fixture = try Fixture()
        let system = FakeSystem(fixture.server)
        let flow = AccountModificationFlow(client: fixture.upgrades, system: system)
        flow.prepareToChangePassword(
            user: Self.demo,
            password: DevelopmentEnvironment.demoPassword,
            newPassword: Self.strong,
            serviceIdentifier: "s",
            userInfo: nil
        )
        while let work = flow.work { await work.value }
        #expect(system.lastScreen?.attemptsText == FlowText.attemptsLeft(5))
        flow.cancelRequest()
        await flow.ending?.value
        #expect(system.outcomes == [.cancelled(.userCanceled, failureReason: nil)])
        #expect(fixture.upgrades.calls == ["changePassword", "cancelPasswordChange(userCanceled)"])
        let store = fixture.server.application.store
        let account = try #require(try store.read { try $0.account(username: try Username(Self.demo)) })
        #expect(try store.read { try $0.openPasswordChanges(accountID: account.id, limit: 10) }.isEmpty)
        // The old password still works: nothing was stored.
        let upgrade = try await fixture.upgrades.real.startUpgrade(
            username: Self.demo,
            password: DevelopmentEnvironment.demoPassword,
            serviceIdentifier: "s"
        )
        #expect(upgrade.upgradeID.isEmpty == false)
    }

    @Test("a password change's step-up whose answer is lost: the server completed it, so does the request")
    func changeStepUpAnswerLost() async throws {
        let fixture = try Fixture(faults: [("/step-up", .loseAnswer)])
        fixture.flow.prepareToChangePassword(
            user: Self.demo,
            password: DevelopmentEnvironment.demoPassword,
            newPassword: Self.strong,
            serviceIdentifier: "s",
            userInfo: nil
        )
        await fixture.settled()
        fixture.flow.submitCode(fixture.server.totpCode())
        #expect(await fixture.system.outcome() == .passwordChanged(user: Self.demo, newPassword: Self.strong))
        #expect(fixture.transport.sent("/step-up").count == 1, "a step-up is sent once")
        #expect(fixture.upgrades.calls.last == "cancelPasswordChange(failed)", "the cancel's answer told")
        #expect(await fixture.passwordWorks(Self.demo, Self.strong))
    }

    @Test("failures end the request in the person's language, never the server's English detail")
    func localizedFailures() async throws {
        let fixture = try Fixture()
        fixture.flow.convertWithoutUserInteraction(
            user: "plain",
            password: "wrong",
            serviceIdentifier: "s",
            userInfo: nil
        )
        let outcome = await fixture.system.outcome()
        #expect(outcome == .cancelled(.failed, failureReason: "The saved password is no longer correct."))
        #expect(fixture.upgrades.calls == ["startUpgrade"], "no upgrade was opened, none to cancel")

        let weak = try Fixture()
        weak.flow.changePasswordWithoutUserInteraction(
            user: "plain",
            password: "pw-plain",
            newPassword: "short",
            serviceIdentifier: "s",
            userInfo: nil
        )
        let refused = await weak.system.outcome()
        #expect(refused == .cancelled(.failed, failureReason: "The new password doesn't meet this website's rules."))
        let detail = await #expect(throws: UpgradeClientError.self) {
            _ = try await weak.upgrades.real.changePassword(
                username: "plain",
                password: "pw-plain",
                newPassword: "short",
                serviceIdentifier: "s"
            )
        }?.detail
        #expect(detail != nil && refused != .cancelled(.failed, failureReason: detail))

        // An empty password without a ticket: nothing is sent.
        let empty = try Fixture()
        empty.flow.convertWithoutUserInteraction(user: "plain", password: "", serviceIdentifier: "s", userInfo: [:])
        #expect(await empty.system.outcome() == .cancelled(.failed, failureReason: FlowText.somethingWentWrong))
        #expect(empty.transport.sent.isEmpty)
    }
}
