import UpgradeEngine

/// What the device receives from a successful Sign in with Apple authorization
/// (`ASAuthorizationAppleIDCredential`): the identity token, a single-use authorization code, the
/// team-scoped user id, the echoed `state`, and — on the first authorization only — the email
/// and name.
public struct AppleAuthorization: Sendable, Equatable {
    public var identityToken: String
    public var authorizationCode: String
    /// The team-scoped `sub`.
    public var user: String
    public var state: String?
    /// Only on the first authorization of this app (group) by this user.
    public var email: String?
    public var fullName: String?
    public var isFirstAuthorization: Bool

    public init(
        identityToken: String,
        authorizationCode: String,
        user: String,
        state: String?,
        email: String?,
        fullName: String?,
        isFirstAuthorization: Bool
    ) {
        self.identityToken = identityToken
        self.authorizationCode = authorizationCode
        self.user = user
        self.state = state
        self.email = email
        self.fullName = fullName
        self.isFirstAuthorization = isFirstAuthorization
    }
}
