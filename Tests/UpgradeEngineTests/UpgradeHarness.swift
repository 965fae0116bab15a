import Foundation
import Synchronization
import UpgradeTestSupport

@testable import UpgradeEngine

/// Everything an upgrade-service test needs: a migrated database, a signing key playing Apple's,
/// an Apple token endpoint whose answers the test controls, and helpers to create accounts and mint
/// identity tokens. Hashing uses small argon2id parameters so tests stay fast.
final class UpgradeHarness: Sendable {
    static let clientID = "com.example.app"
    static let teamID = "TEAMA12345"
    static let keyID = "Wq7kT2r"
    static let now: Int64 = 1_760_000_000
    static let appleKey: RSAPrivateKey = try! RSAPrivateKey(generatingBits: 2048)
    static let fastHash = PasswordHasher.Parameters(memoryKiB: 256, iterations: 1, parallelism: 1)

    let database: TestDatabase
    let secrets = SecretBox.developmentOnly()
    let apple: ScriptedAppleEndpoint
    let service: UpgradeService

    init(
        backend: Backend = .sqlite,
        apple: ScriptedAppleEndpoint = ScriptedAppleEndpoint(),
        policy: UpgradePolicy = .default,
        onEffect: @escaping @Sendable (UpgradeEffect, String) -> Void = { _, _ in }
    ) throws {
        database = try backend.database()
        self.apple = apple
        let verifier = IdentityTokenVerifier(
            keys: try JWKSet(keys: [(Self.keyID, Self.appleKey.publicKey)]),
            policy: try IdentityTokenPolicy(allowedAudiences: [Self.clientID])
        )
        var passwords = PasswordVerifier(dummyParameters: Self.fastHash)
        passwords.parameterSets = StoredHashParameters(store: database.store, secrets: secrets)
        service = UpgradeService(
            store: database.store,
            passwords: passwords,
            secrets: secrets,
            identityTokens: verifier,
            apple: apple,
            configuration: {
                var configuration = UpgradeServiceConfiguration(policy: policy, appleTeamID: Self.teamID)
                configuration.onEffect = onEffect
                configuration.passwordHasher = try! PasswordHasher(parameters: Self.fastHash)
                // Off: these tests call one after another without waiting for a refusal's answer to be
                // due, which would hold its username (`CredentialCheckGate`). FailureFloorTests and
                // CredentialCheckGateTests configure a floor of their own.
                configuration.failureFloor = .zero
                return configuration
            }()
        )
    }

    var store: any UpgradeStore { database.store }

    @discardableResult
    func addAccount(
        _ username: String,
        password: String,
        totpSecret: [UInt8]? = nil,
        recoveryCodes: [String] = [],
        storedHash: String? = nil
    ) throws -> AccountRecord {
        let account = AccountRecord(
            id: UUID().uuidString.lowercased(),
            username: username,
            credentialKind: .password,
            createdAt: Self.now,
            updatedAt: Self.now
        )
        let hash = try storedHash ?? PasswordHasher(parameters: Self.fastHash).hash(password: password)
        let format = try PasswordVerifier().inspect(hash).format.rawValue
        try store.write { tx in
            try tx.insertAccount(account)
            try tx.upsertPasswordCredential(
                PasswordCredentialRecord(accountID: account.id, hash: hash, format: format, updatedAt: Self.now)
            )
            if let totpSecret {
                try tx.upsertTOTPEnrollment(
                    TOTPEnrollmentRecord(
                        accountID: account.id,
                        secretCiphertext: secrets.seal(
                            totpSecret,
                            context: UpgradeService.totpContext(accountID: account.id)
                        ),
                        algorithm: .sha1,
                        digits: 6,
                        period: 30,
                        lastAcceptedStep: nil,
                        createdAt: Self.now
                    )
                )
            }
            try tx.insertRecoveryCodes(accountID: account.id, codeHashes: recoveryCodes.map(RecoveryCodes.hash))
        }
        return account
    }

    /// An identity token as Apple would sign it; every claim can be overridden or removed (`.null`).
    static func identityToken(
        sub: String = "001234.0123456789abcdef0123456789abcdef.1234",
        nonce: String?,
        audience: String = clientID,
        issuedAt: Int64 = now,
        lifetime: Int64 = 600,
        extra: [String: JSONValue] = [:],
        keyID: String = keyID
    ) -> String {
        var claims: [String: JSONValue] = [
            "iss": .string("https://appleid.apple.com"), "aud": .string(audience), "sub": .string(sub),
            "iat": .integer(issuedAt), "exp": .integer(issuedAt + lifetime),
            "email": .string("x7k2@privaterelay.appleid.com"),
            "email_verified": .string("true"), "is_private_email": .bool(true), "nonce_supported": .bool(true),
        ]
        if let nonce { claims["nonce"] = .string(nonce) }
        for (key, value) in extra { claims[key] = value }
        let header = JSONValue.object(["kid": .string(keyID), "alg": .string("RS256")])
        let payload = JSONValue.object(claims.sorted { $0.key < $1.key }.map { JSONValue.Member($0.key, $0.value) })
        return JWSCompact.sign(header: header, payload: payload.serialized()) { appleKey.signRS256($0) }
    }

    func account(_ username: String) throws -> AccountRecord? {
        try store.read { try $0.account(username: Username(username)) }
    }
}

/// Apple's token endpoint as a test controls it: counts exchanges, answers with fresh tokens (and an
/// `id_token` for `idTokenSub`, signed with the harness's Apple key), or fails with a chosen Apple
/// error code; records revocations.
final class ScriptedAppleEndpoint: AppleTokenExchanging, Sendable {
    private struct State {
        var exchanges: [(code: String, clientID: String)] = []
        var failure: AppleEndpointError.Code?
        var delayNanoseconds: UInt64 = 0
        var issuedRefreshTokens: [String] = []
        var idTokenSub: String? = "001234.0123456789abcdef0123456789abcdef.1234"
        var revokedTokens: [String] = []
    }
    private let state = Mutex(State())

    func fail(with code: AppleEndpointError.Code?) { state.withLock { $0.failure = code } }
    func delay(milliseconds: UInt64) { state.withLock { $0.delayNanoseconds = milliseconds * 1_000_000 } }
    /// The user the exchanged codes belong to; nil answers without an `id_token`.
    func codesBelong(to sub: String?) { state.withLock { $0.idTokenSub = sub } }
    var exchangeCount: Int { state.withLock { $0.exchanges.count } }
    var issuedRefreshTokens: [String] { state.withLock { $0.issuedRefreshTokens } }
    var revokedTokens: [String] { state.withLock { $0.revokedTokens } }

    func exchangeAuthorizationCode(
        _ code: String,
        clientID: String
    ) async throws(AppleEndpointError) -> AppleTokenResponse {
        let (failure, delay, refresh, sub) = state.withLock { state in
            state.exchanges.append((code, clientID))
            let refresh = "r." + SecureRandom.token()
            if state.failure == nil { state.issuedRefreshTokens.append(refresh) }
            return (state.failure, state.delayNanoseconds, refresh, state.idTokenSub)
        }
        if delay > 0 { try? await Task.sleep(nanoseconds: delay) }
        if let failure { throw AppleEndpointError(code: failure, httpStatus: 400, message: "scripted") }
        return AppleTokenResponse(
            accessToken: "a." + SecureRandom.token(),
            tokenType: "Bearer",
            expiresIn: 3600,
            refreshToken: refresh,
            idToken: sub.map {
                UpgradeHarness.identityToken(sub: $0, nonce: nil, audience: clientID, lifetime: 1_000_000)
            }
        )
    }

    func revoke(token: String, clientID: String) async throws(AppleEndpointError) {
        state.withLock { $0.revokedTokens.append(token) }
    }
}
