import UpgradeEngine

/// The emulator's client already makes these calls with a real client secret; conforming lets the
/// transfer service drive it exactly as it will drive the HTTPS client.
extension EmulatedAppleClient: AppleUserMigrating {}
