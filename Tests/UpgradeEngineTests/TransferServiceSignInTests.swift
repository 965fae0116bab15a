import Foundation
import Testing

@testable import UpgradeEngine

/// Sign-in with `transfer_sub`, credential state and Apple's server-to-server notifications
/// (docs/apple-protocol.md §3.5, §4) against the Apple ID emulator.
@Suite("Transfer service sign-in, credential state and notifications")
struct TransferServiceSignInTests {
    @Test("a sign-in carrying transfer_sub during the window migrates that account, once")
    func signInMigrates() async throws {
        let world = try TransferWorld()
        let alice = try world.addLinkedUser("alice")
        let bob = try world.addLinkedUser("bob")
        _ = try await world.prepare()
        let windowEndsAt = try world.transferApp()
        world.advance(600)

        let claims = try await world.signInClaims(alice)
        let subB = try world.emulator.subject(userID: alice.appleUserID, teamID: TransferWorld.teamB)
        #expect(claims.subject == subB)
        #expect(claims.transferSub == (try world.record(alice)?.transferSub))

        let first = try world.recipient.signIn(claims: claims, now: world.now)
        #expect(first == TransferSignInResult(accountID: alice.accountID, migrated: true))
        let link = try #require(try world.link(alice))
        #expect(link.sub == subB && link.teamID == TransferWorld.teamB && link.refreshTokenCiphertext == nil)
        #expect(link.email == (try world.emulator.relayEmail(userID: alice.appleUserID, teamID: TransferWorld.teamB)))
        #expect(try world.recipient.credentialState(userID: alice.subA) == .transferred)
        #expect(try world.recipient.credentialState(userID: subB) == .authorized)

        // Tokens carry transfer_sub for the whole window: the repeat is recognised, nothing changes.
        let audit = try world.audit(alice).count
        let again = try world.recipient.signIn(claims: try await world.signInClaims(alice), now: world.now)
        #expect(again == TransferSignInResult(accountID: alice.accountID, migrated: false))
        #expect(try world.audit(alice).count == audit)
        #expect(try world.auditEvents(alice, named: "transfer.signedInWithTransferSub") == 1)

        // The batch finds Alice done and migrates Bob.
        let rows = RowCollector()
        let summary = try await world.complete(windowEndsAt: windowEndsAt, TransferWorld.options(onRow: rows.onRow))
        #expect(rows.row(alice.accountID)?.outcome == .alreadyDone)
        #expect(rows.row(bob.accountID)?.outcome == .succeeded, "\(summary.line)")
        #expect(world.appleB.count(.migrate) == 1)
    }

    @Test("a migrating sign-in whose token has no email drops the old team's relay address and keeps a real one")
    func signInWithoutEmail() async throws {
        let world = try TransferWorld()
        let hidden = try world.addLinkedUser("alice", emailMode: .hidden)
        let shared = try world.addLinkedUser("bob", emailMode: .shared)
        #expect(try world.link(hidden)?.isPrivateEmail == true && world.link(hidden)?.email != nil)
        _ = try await world.prepare()
        _ = try world.transferApp()
        world.advance(600)
        for user in [hidden, shared] {
            var claims = try await world.signInClaims(user)
            claims.email = nil
            claims.isPrivateEmail = nil
            #expect(try world.recipient.signIn(claims: claims, now: world.now).migrated)
        }
        let hiddenLink = try #require(try world.link(hidden))
        #expect(hiddenLink.email == nil && hiddenLink.isPrivateEmail == nil)
        #expect(try world.link(shared)?.email == "bob@example.com")
    }

    @Test("a deployment configured as another team than the transfer's recipient migrates no one by transfer_sub")
    func signInWrongTeam() async throws {
        let world = try TransferWorld()
        let alice = try world.addLinkedUser("alice")
        _ = try await world.prepare()
        _ = try world.transferApp()
        world.advance(600)

        // Team B's token, but the deployment still holds team A's configuration: as `complete`
        // refuses to, the sign-in must not record team B's id as a team A link.
        let claims = try await world.signInClaims(alice)
        #expect(claims.transferSub != nil)
        let audit = try world.audit(alice).count
        do {
            _ = try world.sender.signIn(claims: claims, now: world.now)
            Issue.record("a sign-in migrated an account on a deployment of another team")
        } catch {
            #expect(error.code == .internalError, "\(error)")
            #expect(error.cause?.contains(TransferWorld.teamB) == true, "\(error)")
        }
        #expect(try world.record(alice)?.status == TransferStatus.transferPrepared.rawValue)
        let link = try #require(try world.link(alice))
        #expect(link.sub == alice.subA && link.teamID == TransferWorld.teamA)
        #expect(try world.audit(alice).count == audit)

        // With the recipient's configuration the same token migrates the account.
        #expect(try world.recipient.signIn(claims: claims, now: world.now).migrated)
    }

    @Test("after the window the token has no transfer_sub: the sign-in finds no account and migrates none")
    func signInAfterWindow() async throws {
        let world = try TransferWorld()
        let alice = try world.addLinkedUser("alice")
        _ = try await world.prepare()
        _ = try world.transferApp()
        world.advance(TransferStateMachine.windowLength + 1)

        let claims = try await world.signInClaims(alice)
        #expect(claims.transferSub == nil)
        do {
            _ = try world.recipient.signIn(claims: claims, now: world.now)
            Issue.record("an unknown sub signed in")
        } catch {
            #expect(error.code == .notFound)
        }
        #expect(try world.record(alice)?.status == TransferStatus.transferPrepared.rawValue)
        #expect(try world.link(alice)?.sub == alice.subA)
    }

    @Test("sign-in: the linked sub finds its account; a foreign transfer_sub or a revoked link does not")
    func signInLookups() async throws {
        let world = try TransferWorld()
        let alice = try world.addLinkedUser("alice")
        let claims = try await world.signInClaims(alice)
        #expect(
            try world.sender.signIn(claims: claims, now: world.now)
                == .init(accountID: alice.accountID, migrated: false)
        )

        var stranger = claims
        stranger.subject = "000001.ffffffffffffffffffffffffffffffff.0001"
        stranger.transferSub = "000002.eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee.0002"
        #expect(throws: TransferFailure.self) { try world.sender.signIn(claims: stranger, now: world.now) }

        _ = try world.sender.handleNotification(
            type: "consent-revoked",
            sub: alice.subA,
            email: nil,
            isPrivateEmail: nil,
            now: world.now
        )
        do {
            _ = try world.sender.signIn(claims: claims, now: world.now)
            Issue.record("a revoked link signed in")
        } catch {
            #expect(error.code == .revoked)
        }
    }

    @Test("credential state: unknown ids are notFound, untouched links authorized")
    func credentialState() async throws {
        let world = try TransferWorld()
        let alice = try world.addLinkedUser("alice")
        #expect(try world.sender.credentialState(userID: alice.subA) == .authorized)
        #expect(try world.sender.credentialState(userID: "000003.dddddddddddddddddddddddddddddddd.0003") == .notFound)
        #expect(try world.sender.credentialState(userID: "") == .notFound)
    }

    @Test("consent-revoked: link revoked, refresh token deleted, state revoked; redelivery changes nothing")
    func consentRevoked() async throws {
        let world = try TransferWorld()
        let alice = try world.addLinkedUser("alice")
        let bob = try world.addLinkedUser("bob")
        try world.emulator.revokeConsent(userID: alice.appleUserID, clientID: TransferWorld.clientID)
        let events = try world.drainEvents()
        #expect(events.map(\.type) == ["consent-revoked"])

        let result = try world.deliver(events[0], to: world.sender)
        #expect(result == .init(outcome: .changed, accountID: alice.accountID, status: .revoked))
        let link = try #require(try world.link(alice))
        #expect(link.status == .revoked && link.refreshTokenCiphertext == nil)
        #expect(try world.recipient.credentialState(userID: alice.subA) == .revoked)
        let audit = try world.audit(alice)
        #expect(audit.count == 1 && audit[0].event == "transfer.consentRevoked")
        #expect(audit[0].detail["refreshTokenDeleted"] == "true")

        let redelivered = try world.deliver(events[0], to: world.sender)
        #expect(redelivered.outcome == .unchanged && redelivered.status == .revoked)
        #expect(try world.audit(alice).count == 1)
        #expect(try world.link(alice) == link)

        // A revoked account is no longer visited by the batch.
        let summary = try await world.prepare()
        #expect(summary.rows == 1 && summary.outcomes[.succeeded] == 1, "\(summary.line)")
        #expect(try world.record(bob)?.status == TransferStatus.transferPrepared.rawValue)
    }

    @Test("account-delete and account-deleted both end the link as deleted, forwarding off")
    func accountDeleted() async throws {
        let world = try TransferWorld()
        let alice = try world.addLinkedUser("alice")
        let bob = try world.addLinkedUser("bob")
        try world.emulator.deleteAccount(userID: alice.appleUserID)
        let events = try world.drainEvents()
        #expect(events.map(\.type) == ["account-deleted"])
        #expect(try world.deliver(events[0], to: world.sender).outcome == .changed)
        let link = try #require(try world.link(alice))
        #expect(link.status == .deleted && link.refreshTokenCiphertext == nil && link.emailForwardingEnabled == false)
        #expect(try world.record(alice)?.status == TransferStatus.deleted.rawValue)
        #expect(try world.sender.credentialState(userID: alice.subA) == .revoked)
        #expect(try world.deliver(events[0], to: world.sender).outcome == .unchanged)
        let lateForwarding = try world.sender.handleNotification(
            type: "email-enabled",
            sub: alice.subA,
            email: nil,
            isPrivateEmail: nil,
            now: world.now
        )
        #expect(try lateForwarding.outcome == .unchanged && world.link(alice)?.emailForwardingEnabled == false)

        // The older spelling (docs/apple-protocol.md §4).
        let older = try world.sender.handleNotification(
            type: "account-delete",
            sub: bob.subA,
            email: nil,
            isPrivateEmail: nil,
            now: world.now
        )
        #expect(older == .init(outcome: .changed, accountID: bob.accountID, status: .deleted))
        // A revocation after deletion is acknowledged without change.
        let late = try world.sender.handleNotification(
            type: "consent-revoked",
            sub: bob.subA,
            email: nil,
            isPrivateEmail: nil,
            now: world.now
        )
        #expect(late.outcome == .unchanged && late.status == .deleted)
    }

    @Test("email-disabled and email-enabled record forwarding; redelivery and older events change nothing")
    func emailForwarding() async throws {
        let world = try TransferWorld()
        let alice = try world.addLinkedUser("alice", emailMode: .hidden)
        let relay = try world.emulator.relayEmail(userID: alice.appleUserID, teamID: TransferWorld.teamA)

        try world.emulator.setEmailForwarding(userID: alice.appleUserID, teamID: TransferWorld.teamA, enabled: false)
        let disabled = try #require(try world.drainEvents().first)
        #expect(disabled.type == "email-disabled" && disabled.email == relay && disabled.isPrivateEmail == true)
        #expect(try world.deliver(disabled, to: world.sender).outcome == .changed)
        var link = try #require(try world.link(alice))
        #expect(link.emailForwardingEnabled == false && link.email == relay && link.status == .linked)
        #expect(link.emailForwardingAt == disabled.eventTime)
        #expect(try world.deliver(disabled, to: world.sender).outcome == .unchanged)

        world.advance(60)
        try world.emulator.setEmailForwarding(userID: alice.appleUserID, teamID: TransferWorld.teamA, enabled: true)
        let enabled = try #require(try world.drainEvents().first)
        #expect(try world.deliver(enabled, to: world.sender).outcome == .changed)
        link = try #require(try world.link(alice))
        #expect(link.emailForwardingEnabled == true)

        // The earlier event redelivered late cannot turn forwarding back off.
        #expect(try world.deliver(disabled, to: world.sender).outcome == .unchanged)
        #expect(try world.link(alice)?.emailForwardingEnabled == true)
        // The same older event with event_time in milliseconds is just as old.
        let inMilliseconds = try world.sender.handleNotification(
            type: "email-disabled",
            sub: alice.subA,
            email: relay,
            isPrivateEmail: true,
            eventTime: try #require(disabled.eventTime) * 1000 + 999,
            now: world.now
        )
        #expect(inMilliseconds.outcome == .unchanged)
        let events = try world.audit(alice).map(\.event)
        #expect(events == ["apple.emailForwardingDisabled", "apple.emailForwardingEnabled"])
        #expect(try world.record(alice) == nil, "forwarding does not touch the transfer state")
    }

    @Test("events about ids we never linked, or of undocumented types, are acknowledged without effect")
    func unknownEvents() throws {
        let world = try TransferWorld()
        let alice = try world.addLinkedUser("alice")
        let unknownUser = try world.sender.handleNotification(
            type: "consent-revoked",
            sub: "000004.cccccccccccccccccccccccccccccccc.0004",
            email: nil,
            isPrivateEmail: nil,
            now: world.now
        )
        #expect(unknownUser.outcome == .unknownUser && unknownUser.accountID == nil)
        let unknownType = try world.sender.handleNotification(
            type: "account-paused",
            sub: alice.subA,
            email: nil,
            isPrivateEmail: nil,
            now: world.now
        )
        #expect(unknownType.outcome == .unknownEventType)
        #expect(try world.audit(alice).isEmpty && world.link(alice)?.status == .linked)
    }

    @Test("a revocation after the transfer, sent for either id, ends the migrated account")
    func revocationAfterTransfer() async throws {
        let world = try TransferWorld()
        let alice = try world.addLinkedUser("alice")
        _ = try await world.prepare()
        let windowEndsAt = try world.transferApp()
        _ = try await world.complete(windowEndsAt: windowEndsAt)
        let subB = try world.emulator.subject(userID: alice.appleUserID, teamID: TransferWorld.teamB)

        // Addressed by the sender team's id, which the account no longer has but its record keeps.
        let result = try world.recipient.handleNotification(
            type: "consent-revoked",
            sub: alice.subA,
            email: nil,
            isPrivateEmail: nil,
            now: world.now
        )
        #expect(result == .init(outcome: .changed, accountID: alice.accountID, status: .revoked))
        #expect(try world.recipient.credentialState(userID: alice.subA) == .revoked)
        #expect(try world.recipient.credentialState(userID: subB) == .revoked)
        #expect(try world.link(alice)?.status == .revoked)
    }
}
