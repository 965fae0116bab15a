/// What `ASAuthorizationAppleIDProvider.getCredentialState(forUserID:)` answers on the device
/// (docs/apple-protocol.md §3.5; raw values as AuthenticationServices defines them). Apple has no REST API for
/// it; the emulator exposes it so the device side can be played in tests and demos.
public enum AppleIDCredentialState: Int, Sendable, Equatable {
    case revoked = 0
    case authorized = 1
    case notFound = 2
    /// The id belongs to the team the app was transferred away from.
    case transferred = 3
}
