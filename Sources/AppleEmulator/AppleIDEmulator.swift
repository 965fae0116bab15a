import Foundation
import Synchronization
import UpgradeEngine

/// An in-process model of Apple's Sign in with Apple service, built from docs/apple-protocol.md: teams
/// and their registered client-secret keys, apps (bundle ids and Services ids) owned by teams,
/// Apple users with team-scoped ids and private relay addresses, RS256 signing keys with
/// rotation, device authorizations, the REST endpoints (`/auth/keys`, `/auth/token`,
/// `/auth/revoke`, `/auth/usermigrationinfo`), app transfers with their 60-day window, consent
/// revocation and account deletion with signed server-to-server notifications.
///
/// Apple's servers cannot be reached from development and test machines; this is what the
/// server talks to instead, so it answers exactly as the facts say Apple does — including the
/// errors. It is thread-safe: all state sits behind one lock, and RSA signing happens outside it.
/// Time comes from `clock` (Unix seconds), so tests can move it.
public final class AppleIDEmulator: Sendable {
    public let configuration: Configuration
    let clock: @Sendable () -> Int64
    let state: Mutex<EmulatorState>
    /// Client secrets whose signature verified, by their text: a client reuses one secret for many
    /// requests (docs/apple-protocol.md §2.1), and checking its ES256 signature each time would be
    /// most of the emulator's work. Only the signature check is remembered; the claims are judged
    /// on every request. Taken inside `state`'s lock, never the other way round.
    let verifiedSecrets = Mutex<[String: VerifiedClientSecret]>([:])

    /// At most this many verified secrets are remembered; the memory starts over when full.
    static let verifiedSecretsLimit = 64

    public init(
        configuration: Configuration = Configuration(),
        clock: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
    ) {
        self.configuration = configuration
        self.clock = clock
        var initial = EmulatorState()
        initial.signingKeys = [EmulatorState.SigningKey(keyID: Self.newKeyID(), key: Self.newSigningKey())]
        self.state = Mutex(initial)
    }

    // MARK: Teams, keys and apps

    /// A developer team; `teamID` is 10 characters A-Z / 0-9.
    public func addTeam(_ teamID: String) throws(AppleEmulatorError) {
        guard ClientSecretSigner.isAppleIdentifier(teamID) else {
            throw AppleEmulatorError(.invalidIdentifier, "a team id is 10 characters A-Z or 0-9")
        }
        try state.withLock { state throws(AppleEmulatorError) in
            guard state.teams[teamID] == nil else {
                throw AppleEmulatorError(.alreadyExists, "team \(teamID) already exists")
            }
            state.teams[teamID] = EmulatorState.Team()
        }
    }

    /// Registers the public half of a team's Sign in with Apple key (`.p8`), which its client
    /// secrets must be signed with.
    public func registerKey(teamID: String, keyID: String, publicKey: P256PublicKey) throws(AppleEmulatorError) {
        guard ClientSecretSigner.isAppleIdentifier(keyID) else {
            throw AppleEmulatorError(.invalidIdentifier, "a key id is 10 characters A-Z or 0-9")
        }
        try state.withLock { state throws(AppleEmulatorError) in
            guard state.teams[teamID] != nil else { throw AppleEmulatorError(.unknownTeam, "no team \(teamID)") }
            guard state.teams[teamID]?.keys[keyID] == nil else {
                throw AppleEmulatorError(.alreadyExists, "key \(keyID) is already registered")
            }
            state.teams[teamID]?.keys[keyID] = publicKey
        }
    }

    /// An app (bundle id) or a Services id owned by `teamID`. A Services id grouped with a
    /// primary App ID shares its consent and its `sub`s, and moves with it in a transfer.
    public func addApp(clientID: String, teamID: String, primaryAppID: String? = nil) throws(AppleEmulatorError) {
        guard ClientSecretSigner.isClientID(clientID) else {
            throw AppleEmulatorError(.invalidIdentifier, "a client id is 1 to 255 printable ASCII characters")
        }
        try state.withLock { state throws(AppleEmulatorError) in
            guard state.teams[teamID] != nil else { throw AppleEmulatorError(.unknownTeam, "no team \(teamID)") }
            guard state.apps[clientID] == nil else {
                throw AppleEmulatorError(.alreadyExists, "client id \(clientID) already exists")
            }
            if let primaryAppID {
                guard let primary = state.apps[primaryAppID], primary.primaryAppID == nil, primary.teamID == teamID
                else {
                    throw AppleEmulatorError(.unknownApp, "no primary App ID \(primaryAppID) in team \(teamID)")
                }
            }
            state.apps[clientID] = EmulatorState.App(teamID: teamID, primaryAppID: primaryAppID)
        }
    }

    // MARK: Signing keys

    /// The published keys, as `GET /auth/keys` returns them.
    public var keySet: JWKSet {
        let keys = state.withLock { $0.signingKeys }
        do {
            return try JWKSet(keys: keys.map { ($0.keyID, $0.key.publicKey) })
        } catch {
            preconditionFailure("the emulator's own key set is invalid: \(error)")
        }
    }

    /// The `kid` that signs new tokens.
    public var activeSigningKeyID: String {
        state.withLock { $0.signingKeys[$0.signingKeys.count - 1].keyID }
    }

    /// Publishes a new RS256 key and signs with it from now on; older keys stay published (so
    /// tokens they signed still verify) until retired. Returns the new `kid`.
    @discardableResult
    public func rotateSigningKey() -> String {
        let key = EmulatorState.SigningKey(keyID: Self.newKeyID(), key: Self.newSigningKey())
        state.withLock { $0.signingKeys.append(key) }
        return key.keyID
    }

    /// Stops publishing a key; tokens it signed no longer verify. The active key cannot be retired.
    public func retireSigningKey(_ keyID: String) throws(AppleEmulatorError) {
        try state.withLock { state throws(AppleEmulatorError) in
            guard let index = state.signingKeys.firstIndex(where: { $0.keyID == keyID }) else {
                throw AppleEmulatorError(.unknownKey, "no published signing key \(IdentityTokenError.quoted(keyID))")
            }
            guard index != state.signingKeys.count - 1 else {
                throw AppleEmulatorError(.notAllowed, "the active signing key cannot be retired; rotate first")
            }
            state.signingKeys.remove(at: index)
        }
    }

    // MARK: Users

    /// A new Apple Account; returns the emulator's own id for it (not a `sub`: those are team-scoped).
    /// `realUserStatus`: 0 unsupported, 1 unknown, 2 likely real.
    public func createUser(
        email: String,
        fullName: String? = nil,
        realUserStatus: Int = 2
    ) throws(AppleEmulatorError)
        -> String
    {
        guard email.contains("@"), ClientSecretSigner.isClientID(email) else {
            throw AppleEmulatorError(.invalidIdentifier, "an Apple Account needs a plausible email address")
        }
        guard (0...2).contains(realUserStatus) else {
            throw AppleEmulatorError(.invalidIdentifier, "real_user_status is 0, 1 or 2")
        }
        let userID = "user-" + SecureRandom.bytes(8).hexString
        state.withLock {
            $0.users[userID] = EmulatorState.User(email: email, fullName: fullName, realUserStatus: realUserStatus)
        }
        return userID
    }

    /// A user made by ``createAuthorizedUsers(count:clientID:emailMode:)``.
    public struct AuthorizedUser: Sendable, Equatable {
        public var userID: String
        /// The user's `sub` for the team that owns the app now.
        public var sub: String
        /// The address the app was given: the real one, or the team's relay address.
        public var email: String
    }

    /// At most this many users per ``createAuthorizedUsers(count:clientID:emailMode:)`` call, so one
    /// request stays bounded in time and answer size.
    public static let maximumUserBatch = 10_000

    /// `count` new Apple Accounts (`<userId>@example.com`) that have each already signed in to
    /// `clientID` with `emailMode`, as `createUser` then `authorize` would leave them, without the
    /// codes and signed tokens, which a caller seeding many linked accounts does not use (load tests).
    public func createAuthorizedUsers(
        count: Int,
        clientID: String,
        emailMode: AppleEmailMode
    ) throws(AppleEmulatorError) -> [AuthorizedUser] {
        guard (1...Self.maximumUserBatch).contains(count) else {
            throw AppleEmulatorError(.notAllowed, "count must be 1 to \(Self.maximumUserBatch)")
        }
        return try state.withLock { state throws(AppleEmulatorError) in
            guard let app = state.apps[clientID] else {
                throw AppleEmulatorError(.unknownApp, "no app with client id \(clientID)")
            }
            let group = state.group(of: clientID)
            var users: [AuthorizedUser] = []
            users.reserveCapacity(count)
            for _ in 0..<count {
                var userID: String
                repeat { userID = "user-" + SecureRandom.bytes(8).hexString } while state.users[userID] != nil
                var user = EmulatorState.User(email: userID + "@example.com", fullName: nil, realUserStatus: 2)
                user.consents[group] = EmulatorState.Consent(emailMode: emailMode, revoked: false)
                state.users[userID] = user
                let sub = Self.subject(&state, userID: userID, teamID: app.teamID)
                // The consent was just recorded, so the app has an address for the user.
                let email = Self.email(&state, userID: userID, clientID: clientID, teamID: app.teamID)?.address ?? ""
                users.append(AuthorizedUser(userID: userID, sub: sub, email: email))
            }
            return users
        }
    }

    /// The user's `sub` as `teamID` sees it (created on first use, stable afterwards).
    public func subject(userID: String, teamID: String) throws(AppleEmulatorError) -> String {
        try state.withLock { state throws(AppleEmulatorError) in
            guard state.users[userID] != nil else { throw AppleEmulatorError(.unknownUser, "no user \(userID)") }
            guard state.teams[teamID] != nil else { throw AppleEmulatorError(.unknownTeam, "no team \(teamID)") }
            return Self.subject(&state, userID: userID, teamID: teamID)
        }
    }

    /// The user's private relay address for `teamID`.
    public func relayEmail(userID: String, teamID: String) throws(AppleEmulatorError) -> String {
        try state.withLock { state throws(AppleEmulatorError) in
            guard state.users[userID] != nil else { throw AppleEmulatorError(.unknownUser, "no user \(userID)") }
            guard state.teams[teamID] != nil else { throw AppleEmulatorError(.unknownTeam, "no team \(teamID)") }
            return Self.relayEmail(&state, userID: userID, teamID: teamID)
        }
    }

    static func subject(_ state: inout EmulatorState, userID: String, teamID: String) -> String {
        if let existing = state.users[userID]?.subs[teamID] { return existing }
        var sub: String
        repeat {
            sub = "\(randomDigits(6)).\(SecureRandom.bytes(16).hexString).\(randomDigits(4))"
        } while state.subjects[sub] != nil
        state.users[userID]?.subs[teamID] = sub
        state.subjects[sub] = (userID, teamID)
        return sub
    }

    static func relayEmail(_ state: inout EmulatorState, userID: String, teamID: String) -> String {
        if let existing = state.users[userID]?.relayEmails[teamID] { return existing }
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789".utf8)
        let local = SecureRandom.bytes(10).map { alphabet[Int($0) % alphabet.count] }
        let email = String(decoding: local, as: UTF8.self) + "@privaterelay.appleid.com"
        state.users[userID]?.relayEmails[teamID] = email
        return email
    }

    // MARK: Authorization (the device side)

    /// The user signs in to `clientID` on a device (`ASAuthorizationAppleIDRequest`). The first
    /// authorization of an app group records consent and the email choice (`emailMode`; later
    /// authorizations keep the first choice, as Apple does) and returns email and name once;
    /// `real_user_status` is in the first token only. During the 60 days after the app was
    /// transferred, the token also carries `transfer_sub` for users the previous team knew. The token
    /// names its code in `c_hash`, as native tokens do; `codeHashInToken: false` leaves it out, as
    /// tokens from other flows do.
    public func authorize(
        userID: String,
        clientID: String,
        nonce: String?,
        state requestState: String?,
        emailMode: AppleEmailMode,
        redirectURI: String? = nil,
        codeHashInToken: Bool = true
    ) throws(AppleEmulatorError) -> AppleAuthorization {
        let now = clock()
        let code = "c" + SecureRandom.bytes(16).hexString + ".0.\(SecureRandom.token(byteCount: 12))"
        let issued = try state.withLock { state throws(AppleEmulatorError) in
            guard let user = state.users[userID] else { throw AppleEmulatorError(.unknownUser, "no user \(userID)") }
            guard !user.deleted else { throw AppleEmulatorError(.notAllowed, "the Apple Account was deleted") }
            guard let app = state.apps[clientID] else {
                throw AppleEmulatorError(.unknownApp, "no app with client id \(clientID)")
            }
            let group = state.group(of: clientID)
            // An existing consent keeps its email choice; none (or a revoked one: "Stop using
            // Apple ID" makes the next sign-in show the sheet again) records a new one.
            let first = user.consents[group].map { $0.revoked } ?? true
            if first {
                state.users[userID]?.consents[group] = EmulatorState.Consent(emailMode: emailMode, revoked: false)
            }
            state.codes[EmulatorState.secretKey(code)] = EmulatorState.Code(
                clientID: clientID,
                userID: userID,
                teamID: app.teamID,
                nonce: nonce,
                redirectURI: redirectURI,
                issuedAt: now,
                authTime: now
            )
            let claims = identityTokenClaims(
                &state,
                userID: userID,
                clientID: clientID,
                teamID: app.teamID,
                nonce: nonce,
                authTime: now,
                now: now,
                codeHash: codeHashInToken ? Self.halfHash(code) : nil,
                accessTokenHash: nil,
                firstAuthorization: first
            )
            let email = Self.email(&state, userID: userID, clientID: clientID, teamID: app.teamID)
            return (
                claims, state.signingKeys[state.signingKeys.count - 1],
                Self.subject(&state, userID: userID, teamID: app.teamID), first, email?.address, user.fullName
            )
        }
        let (claims, signingKey, sub, first, email, fullName) = issued
        return AppleAuthorization(
            identityToken: Self.sign(claims, with: signingKey),
            authorizationCode: code,
            user: sub,
            state: requestState,
            email: first ? email : nil,
            fullName: first ? fullName : nil,
            isFirstAuthorization: first
        )
    }

    /// The email the app sees: the real address or the team's relay address, per the consent.
    static func email(
        _ state: inout EmulatorState,
        userID: String,
        clientID: String,
        teamID: String
    ) -> (
        address: String, isPrivate: Bool
    )? {
        guard let user = state.users[userID], let consent = user.consents[state.group(of: clientID)] else { return nil }
        switch consent.emailMode {
        case .shared: return (user.email, false)
        case .hidden: return (relayEmail(&state, userID: userID, teamID: teamID), true)
        }
    }

    /// Claims in the order Apple's tokens show them (docs/apple-protocol.md §1.2).
    func identityTokenClaims(
        _ state: inout EmulatorState,
        userID: String,
        clientID: String,
        teamID: String,
        nonce: String?,
        authTime: Int64,
        now: Int64,
        codeHash: String?,
        accessTokenHash: String?,
        firstAuthorization: Bool
    ) -> JSONValue {
        let sub = Self.subject(&state, userID: userID, teamID: teamID)
        let email = Self.email(&state, userID: userID, clientID: clientID, teamID: teamID)
        var transferSub: String?
        if let transfer = state.apps[clientID]?.transfer, transfer.toTeam == teamID,
            now < transfer.completedAt + configuration.transferWindow,
            state.users[userID]?.subs[transfer.fromTeam] != nil
        {
            transferSub = Self.transferID(&state, userID: userID, from: transfer.fromTeam, to: teamID)
        }
        return .object([
            "iss": .string(configuration.issuer), "aud": .string(clientID),
            "exp": .integer(now + configuration.identityTokenLifetime), "iat": .integer(now), "sub": .string(sub),
            "nonce": nonce.map(JSONValue.string), "at_hash": accessTokenHash.map(JSONValue.string),
            "c_hash": codeHash.map(JSONValue.string), "email": email.map { .string($0.address) },
            "email_verified": email.map { _ in booleanClaim(true) },
            "is_private_email": email.flatMap { $0.isPrivate ? booleanClaim(true) : nil },
            "auth_time": .integer(authTime), "nonce_supported": .bool(true),
            "real_user_status": firstAuthorization
                ? state.users[userID].map { .integer(Int64($0.realUserStatus)) } : nil,
            "transfer_sub": transferSub.map(JSONValue.string),
        ])
    }

    func booleanClaim(_ value: Bool) -> JSONValue {
        switch configuration.booleanClaims {
        case .json: return .bool(value)
        case .string: return .string(value ? "true" : "false")
        }
    }

    /// The stable transfer identifier of a user moving from one team to another (1:1 with the
    /// sender's `sub`, the same for every app moved to the same recipient).
    static func transferID(_ state: inout EmulatorState, userID: String, from: String, to: String) -> String {
        let key = EmulatorState.TransferKey(userID: userID, fromTeam: from, toTeam: to)
        if let existing = state.transferIDs[key] { return existing }
        var transferSub: String
        repeat {
            transferSub = "\(randomDigits(6)).\(SecureRandom.bytes(16).hexString).\(randomDigits(4))"
        } while state.transfers[transferSub] != nil
        state.transferIDs[key] = transferSub
        state.transfers[transferSub] = key
        return transferSub
    }

    // MARK: Transfers, consent and deletion

    /// Completes an App Store Connect transfer of `clientID` (a primary App ID) and the Services
    /// ids grouped with it to `toTeam`. Both teams may use the migration endpoints for the next
    /// 60 days.
    public func transferApp(clientID: String, toTeam: String) throws(AppleEmulatorError) {
        let now = clock()
        try state.withLock { state throws(AppleEmulatorError) in
            guard let app = state.apps[clientID] else { throw AppleEmulatorError(.unknownApp, "no app \(clientID)") }
            guard app.primaryAppID == nil else {
                throw AppleEmulatorError(.notAllowed, "\(clientID) is grouped; transfer its primary App ID")
            }
            guard state.teams[toTeam] != nil else { throw AppleEmulatorError(.unknownTeam, "no team \(toTeam)") }
            guard app.teamID != toTeam else {
                throw AppleEmulatorError(.notAllowed, "\(clientID) already belongs to \(toTeam)")
            }
            let transfer = EmulatorState.Transfer(fromTeam: app.teamID, toTeam: toTeam, completedAt: now)
            for (id, member) in state.apps where id == clientID || member.primaryAppID == clientID {
                state.apps[id]?.teamID = toTeam
                state.apps[id]?.transfer = transfer
            }
        }
    }

    /// The user stops using Sign in with Apple for the app group: tokens die, the team is told
    /// (`consent-revoked`), and the next sign-in shows the sheet again. With `notify` false the
    /// notification is never sent, as when it is lost on its way (the team's endpoint was down
    /// through Apple's retries): only a check of the refresh token (`grant_type=refresh_token`
    /// answers `invalid_grant`) finds out.
    public func revokeConsent(userID: String, clientID: String, notify: Bool = true) throws(AppleEmulatorError) {
        let now = clock()
        let pending = try state.withLock { state throws(AppleEmulatorError) -> [PendingNotification] in
            guard let user = state.users[userID] else { throw AppleEmulatorError(.unknownUser, "no user \(userID)") }
            guard let app = state.apps[clientID] else { throw AppleEmulatorError(.unknownApp, "no app \(clientID)") }
            let group = state.group(of: clientID)
            guard let consent = user.consents[group], !consent.revoked else {
                throw AppleEmulatorError(.notAllowed, "the user has not authorized \(clientID)")
            }
            state.users[userID]?.consents[group]?.revoked = true
            Self.revokeGrants(&state, userID: userID, group: group)
            guard notify else { return [] }
            let sub = Self.subject(&state, userID: userID, teamID: app.teamID)
            return [notification(&state, type: .consentRevoked, group: group, sub: sub, email: nil, now: now)]
        }
        deliver(pending)
    }

    /// The user deletes their Apple Account: every token dies, every team it used is told.
    public func deleteAccount(userID: String) throws(AppleEmulatorError) {
        let now = clock()
        let pending = try state.withLock { state throws(AppleEmulatorError) in
            guard let user = state.users[userID], !user.deleted else {
                throw AppleEmulatorError(.unknownUser, "no user \(userID)")
            }
            state.users[userID]?.deleted = true
            var pending: [PendingNotification] = []
            for (group, consent) in user.consents.sorted(by: { $0.key < $1.key }) where !consent.revoked {
                Self.revokeGrants(&state, userID: userID, group: group)
                guard let teamID = state.apps[group]?.teamID else { continue }
                let sub = Self.subject(&state, userID: userID, teamID: teamID)
                pending.append(
                    notification(
                        &state,
                        type: configuration.accountDeletedEventType,
                        group: group,
                        sub: sub,
                        email: nil,
                        now: now
                    )
                )
            }
            return pending
        }
        deliver(pending)
    }

    /// The user turns forwarding from their relay address for `teamID` off or on
    /// (`email-disabled` / `email-enabled` to each of the team's app groups they hid their email from).
    public func setEmailForwarding(userID: String, teamID: String, enabled: Bool) throws(AppleEmulatorError) {
        let now = clock()
        let pending = try state.withLock { state throws(AppleEmulatorError) -> [PendingNotification] in
            guard let user = state.users[userID], !user.deleted else {
                throw AppleEmulatorError(.unknownUser, "no user \(userID)")
            }
            guard state.teams[teamID] != nil else { throw AppleEmulatorError(.unknownTeam, "no team \(teamID)") }
            let changed =
                enabled
                ? state.users[userID]?.forwardingDisabled.remove(teamID) != nil
                : state.users[userID]?.forwardingDisabled.insert(teamID).inserted == true
            // Toggling to the current setting changes nothing and tells nobody.
            guard changed else { return [] }
            var pending: [PendingNotification] = []
            for (group, consent) in user.consents.sorted(by: { $0.key < $1.key })
            where !consent.revoked && consent.emailMode == .hidden && state.apps[group]?.teamID == teamID {
                let sub = Self.subject(&state, userID: userID, teamID: teamID)
                let email = Self.relayEmail(&state, userID: userID, teamID: teamID)
                pending.append(
                    notification(
                        &state,
                        type: enabled ? .emailEnabled : .emailDisabled,
                        group: group,
                        sub: sub,
                        email: email,
                        now: now
                    )
                )
            }
            return pending
        }
        deliver(pending)
    }

    /// Invalidates the user's refresh and access tokens for every client of an app group.
    static func revokeGrants(_ state: inout EmulatorState, userID: String, group: String) {
        for (key, grant) in state.refreshTokens where grant.userID == userID && state.group(of: grant.clientID) == group
        {
            state.refreshTokens[key]?.revoked = true
        }
        for (key, grant) in state.accessTokens where grant.userID == userID && state.group(of: grant.clientID) == group
        {
            state.accessTokens[key]?.revoked = true
        }
    }

    /// What `getCredentialState(forUserID:)` answers on a device running `clientID`.
    public func credentialState(forUserID sub: String, clientID: String) -> AppleCredentialState {
        state.withLock { state in
            guard let app = state.apps[clientID], let (userID, teamID) = state.subjects[sub],
                let user = state.users[userID]
            else { return .notFound }
            if user.deleted { return .revoked }
            guard let consent = user.consents[state.group(of: clientID)] else { return .notFound }
            if teamID == app.teamID { return consent.revoked ? .revoked : .authorized }
            if app.transfer?.fromTeam == teamID { return .transferred }
            return .notFound
        }
    }

    // MARK: Notifications

    /// Signed notifications waiting for delivery, oldest first; the queue is emptied.
    public func drainNotifications() -> [AppleServerNotification] {
        state.withLock { state in
            defer { state.outbox.removeAll() }
            return state.outbox
        }
    }

    struct PendingNotification: Sendable {
        var clientID: String
        var type: AppleServerNotification.EventType
        var claims: JSONValue
        var key: EmulatorState.SigningKey
    }

    func notification(
        _ state: inout EmulatorState,
        type: AppleServerNotification.EventType,
        group: String,
        sub: String,
        email: String?,
        now: Int64
    ) -> PendingNotification {
        let event = JSONValue.object([
            "type": .string(type.rawValue), "sub": .string(sub), "event_time": .integer(now),
            "email": email.map(JSONValue.string), "is_private_email": email.map { _ in .string("true") },
        ])
        let claims = JSONValue.object([
            "iss": .string(configuration.issuer), "aud": .string(group), "iat": .integer(now),
            "jti": .string(SecureRandom.token(byteCount: 16)),
            "events": configuration.eventsAsString ? .string(event.serializedString) : event,
        ])
        return PendingNotification(
            clientID: group,
            type: type,
            claims: claims,
            key: state.signingKeys[state.signingKeys.count - 1]
        )
    }

    /// Signs outside the lock, then queues.
    func deliver(_ pending: [PendingNotification]) {
        guard !pending.isEmpty else { return }
        let signed = pending.map {
            AppleServerNotification(clientID: $0.clientID, type: $0.type, payload: Self.sign($0.claims, with: $0.key))
        }
        state.withLock { $0.outbox.append(contentsOf: signed) }
    }

    // MARK: Helpers

    static func sign(_ claims: JSONValue, with signingKey: EmulatorState.SigningKey) -> String {
        let header = JSONValue.object(["kid": .string(signingKey.keyID), "alg": .string("RS256")])
        return JWSCompact.sign(header: header, payload: claims.serialized()) { signingKey.key.signRS256($0) }
    }

    /// OpenID Connect's `c_hash` / `at_hash`: base64url of the left half of SHA-256(value).
    static func halfHash(_ value: String) -> String {
        Base64URL.encode(Digest.sha256(value).prefix(16))
    }

    static func randomDigits(_ count: Int) -> String {
        String(SecureRandom.bytes(count).map { Character(Unicode.Scalar(UInt8(ascii: "0") + $0 % 10)) })
    }

    /// Apple-like short key ids (`fh6Bs8C`, `W6WcOKB`...).
    static func newKeyID() -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)
        return String(decoding: SecureRandom.bytes(8).map { alphabet[Int($0) % alphabet.count] }, as: UTF8.self)
    }

    static func newSigningKey() -> RSAPrivateKey {
        do {
            return try RSAPrivateKey(generatingBits: 2048)
        } catch {
            preconditionFailure("cannot generate the emulator's RSA signing key: \(error)")
        }
    }
}
