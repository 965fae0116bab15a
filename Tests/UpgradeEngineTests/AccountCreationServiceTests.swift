import Testing
import UpgradeTestSupport

@testable import UpgradeEngine

@Suite("AccountCreationService: one account, its credentials and its audit row in one transaction")
struct AccountCreationServiceTests {
    static let now: Int64 = 1_700_000_000

    @Test(
        "an account with TOTP and recovery codes; the audit row says what it got, never a secret",
        arguments: Backend.all
    )
    func creates(_ backend: Backend) throws {
        let database = try backend.database()
        let secrets = SecretBox.developmentOnly()
        let totp = try OTPAuthURI.parse("otpauth://totp/Example:alice?secret=JBSWY3DPEHPK3PXPJBSWY3DP&issuer=Example")
        let request = try AccountCreationService.Request(
            username: Username("Alice"),
            password: "s3cret-pass",
            totp: totp,
            recoveryCodes: 3,
            origin: "test"
        )
        let created = try AccountCreationService(store: database.store, secrets: secrets).create(request, now: Self.now)
        #expect(created.account.username == "alice" && created.recoveryCodes.count == 3)

        try database.store.read { tx in
            let id = created.account.id
            #expect(try tx.account(username: Username("alice"))?.id == id)
            let password = try #require(try tx.passwordCredential(accountID: id))
            #expect(password.format == "argon2id" && password.hash.hasPrefix("$argon2id$"))
            let enrollment = try #require(try tx.totpEnrollment(accountID: id))
            let sealed = try secrets.open(
                enrollment.secretCiphertext,
                context: UpgradeService.totpContext(accountID: id)
            )
            #expect(sealed == totp.secret)
            #expect(try tx.unusedRecoveryCodeCount(accountID: id) == 3)
            let events = try tx.auditEvents(AuditSearch(accountID: id, limit: 10))
            #expect(events.map(\.event) == ["account.created"])
            #expect(
                events.first?.detail
                    == [
                        "passwordFormat": "argon2id", "secondFactor": "totp", "recoveryCodes": "3", "origin": "test",
                        "credentialKind": "password",
                    ]
            )
        }
    }

    @Test(
        "a taken username, a look-alike and a bad password are refused, and nothing is written",
        arguments: Backend.all
    )
    func refuses(_ backend: Backend) throws {
        let database = try backend.database()
        let service = AccountCreationService(store: database.store, secrets: nil)
        let alice = try service.create(.init(username: Username("alice"), password: "pw"), now: Self.now).account

        #expect(throws: AccountCreationError.usernameTaken) {
            try service.create(.init(username: Username("ALICE"), password: "pw"), now: Self.now)
        }
        #expect(throws: AccountCreationError.lookAlike(other: alice)) {
            try service.create(.init(username: Username("\u{251}lice"), password: "pw"), now: Self.now)
        }
        #expect(throws: AccountCreationError.emptyPassword) {
            try AccountCreationService.Request(username: Username("bob"), password: "")
        }
        #expect(throws: AccountCreationError.passwordTooLong) {
            try AccountCreationService.Request(username: Username("bob"), password: String(repeating: "x", count: 1025))
        }
        #expect(throws: AccountCreationError.recoveryCodeCount) {
            try AccountCreationService.Request(username: Username("bob"), password: "pw", recoveryCodes: 21)
        }
        let accounts = try database.store.read { try $0.accounts(afterID: nil, limit: 10) }
        #expect(accounts.map(\.username) == ["alice"])
        let events = try database.store.read { try $0.auditEvents(AuditSearch(limit: 10)) }
        #expect(events.count == 1)
    }
}
