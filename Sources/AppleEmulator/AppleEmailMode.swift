import UpgradeEngine

/// What the user picks on the Sign in with Apple sheet the first time they authorize an app:
/// share their real address or hide it behind a private relay address (`@privaterelay.appleid.com`,
/// one per user and team). Apple keeps the choice for later authorizations.
public enum AppleEmailMode: String, Sendable, Equatable, CaseIterable {
    case shared
    case hidden
}
